"""tf.data readers for the TFRecord files of every task (one place, not one per runner).

`pretraining_dataset` reads create_pretraining_data.py's files; `fine_tuning_dataset` reads one
file of a task's records given its schema (`data.glue.records`, `data.squad.records`).

Every reader defines the global stream of serialized records (its order depends only on the
files and the seed) and cuts it into global batches of `batch_size`; a
`data.records.batching.Batching` says what one input pipeline yields of each (its slice for its
replicas, cut to a length bucket, sorted, padded to whole batches).
"""

import re
import struct

import tensorflow as tf

from data.records.batching import Batching, batch_examples, plain_map
from fileio.errors import UserError


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq):
    """The features create_pretraining_data.py writes, with their fixed lengths."""
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def check_record_lengths(paths, feature_spec, producer="create_pretraining_data.py"):
    """Reads the first record of `paths` and checks every fixed-length feature against the spec,
    so that a mismatch is one clear error rather than a shape failure deep inside TF, and no
    record at all is one clear error rather than an empty input pipeline.

    Args:
        paths: a TFRecord file, or a list of them (empty ones are passed over).
        feature_spec: `{name: tf.io.FixedLenFeature}` of the records.
        producer: the program that writes such records, for the message.

    Raises:
        ValueError: naming the file, the feature, both lengths and the flag to fix; or, if no
            file holds a record, naming the files.
    """
    paths = [paths] if isinstance(paths, str) else list(paths)
    for path in paths:
        if _check_first_record(path, feature_spec, producer):
            return
    if len(paths) == 1:
        raise UserError(
            f"{paths[0]} holds no records: pass as --input_file the TFRecord files that "
            f"{producer} wrote."
        )
    raise UserError(
        f"None of the {len(paths)} --input_file files holds a record ({paths[0]}, ...): pass "
        f"the TFRecord files that {producer} wrote."
    )


def _check_first_record(path, feature_spec, producer):
    """Checks the first record of `path` (see `check_record_lengths`); False if it has none."""
    for raw in tf.data.TFRecordDataset([path]).take(1):
        example = tf.train.Example.FromString(raw.numpy())
        for name, spec in feature_spec.items():
            feature = example.features.feature.get(name)
            if feature is None:
                raise ValueError(f"{path}: records have no feature {name!r}.")
            kind = feature.WhichOneof("kind")
            length = len(getattr(feature, kind).value) if kind else 0
            if length != spec.shape[0]:
                flag = (
                    "max_predictions_per_seq"
                    if name.startswith("masked_lm")
                    else ("max_seq_length")
                )
                raise ValueError(
                    f"{path}: feature {name!r} has length {length} but the flags expect "
                    f"{spec.shape[0]}; pass the --{flag} that {producer} used."
                )
        return True
    return False


def _records_before(path, offset):
    """How many whole records of `path` start before byte `offset` (walking the headers)."""
    count, position = 0, 0
    with tf.io.gfile.GFile(path, "rb") as f:
        while position < offset:
            f.seek(position)
            header = f.read(8)
            if len(header) < 8:
                break
            # Each record: 8-byte length, 4-byte CRC of it, the data, 4-byte CRC of the data.
            position += 16 + struct.unpack("<Q", header)[0]
            count += 1 if position <= offset else 0
    return count


def _first_damage(path):
    """TensorFlow's DataLossError reading `path` through, or None if it reads cleanly."""
    try:
        for _ in tf.data.TFRecordDataset([path], buffer_size=1 << 22).batch(4096):
            pass
    except tf.errors.DataLossError as err:
        return err
    return None


def damaged_records_error(files, err, remedy="restore it from a good copy or write it again"):
    """The `UserError` for a DataLossError `err` met while reading the TFRecord `files`.

    Reads the files again, one at a time, to find the damaged one (only after the failure, so
    reading costs nothing while the files are good), and says where in it the damage is.

    Args:
        files: the TFRecord paths the failed reader read.
        err: the `tf.errors.DataLossError`.
        remedy: what the user should do about the file.
    """
    for path in files:
        found = _first_damage(path)
        if found is None:
            continue
        text = str(found)
        match = re.search(r"(corrupted|truncated) record at (\d+)", text)
        if match is None:
            return UserError(f"{path} is damaged ({text.strip()}): {remedy}.")
        kind, offset = match.group(1), int(match.group(2))
        state = "truncated" if kind == "truncated" else "damaged"
        return UserError(
            f"{path} is {state}: the record at byte {offset} (after record "
            f"{_records_before(path, offset)}) is {'cut short' if state == 'truncated' else 'corrupted'}; "
            f"{remedy}."
        )
    named = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    first = str(err).strip().splitlines()[0] if str(err).strip() else "data loss"
    return UserError(f"A TFRecord file of {named} could not be read ({first}): {remedy}.")


class naming_damaged_records:  # noqa: N801 - used as a function: `with naming_damaged_records(files):`
    """Turns a DataLossError inside a `with` block (a reader of `files` met a damaged record)
    into the `UserError` of `damaged_records_error`; reusable for several blocks."""

    def __init__(self, files, remedy="restore it from a good copy or write it again"):
        self.files, self.remedy = list(files), remedy

    def __enter__(self):
        return self

    def __exit__(self, kind, err, trace):
        if isinstance(err, tf.errors.DataLossError):
            raise damaged_records_error(self.files, err, self.remedy) from err
        return False


def _parsed_batches(records, feature_spec, batch_size, drop_remainder, batching, skip=0):
    """Serialized records -> this pipeline's parsed batches (see `batch_examples`)."""
    # Sorting and grouping windows are parsed whole; otherwise each global batch is parsed at
    # once. One vectorised parse per batch costs a fraction of per-record parsing.
    windows = batching.sort_batches or batching.group_batches or 1
    ds = records.batch(
        batch_size * windows, drop_remainder=drop_remainder and not batching.sort_batches
    )

    def parse(*serialized):
        # Records zipped with those beside them (`fine_tuning_dataset`) come as a tuple.
        specs = feature_spec if isinstance(feature_spec, tuple) else (feature_spec,)
        parsed = {}
        for part, spec in zip(serialized, specs, strict=True):
            parsed.update(tf.io.parse_example(part, spec))
        return parsed

    if batching.background:
        ds = plain_map(ds, parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    else:
        # Parsed on the caller's thread when asked for: no tf.data thread runs beside the model.
        ds = plain_map(ds, parse)
    ds = batch_examples(ds, batch_size, drop_remainder, batching, skip)
    return ds.prefetch(tf.data.AUTOTUNE) if batching.background else ds


def _pipeline_files(files, batching):
    """The files this pipeline reads, and the batching of its own stream.

    With at least as many files as pipelines, each pipeline reads every `num_pipelines`-th file
    (file sharding: no worker reads the whole corpus) and its stream is its own. Otherwise every
    pipeline reads all files in the same seeded order and keeps its slice of each global batch
    (record sharding: the batches one device would see).
    """
    if batching.num_pipelines > 1 and len(files) >= batching.num_pipelines:
        return files[batching.pipeline_index :: batching.num_pipelines], batching.local()
    return files, batching


def pretraining_dataset(
    files,
    max_seq_length,
    max_predictions_per_seq,
    batch_size,
    is_training,
    seed=None,
    skip_batches=0,
    batching=None,
):
    """The original run_pretraining input pipeline, made deterministic for a given seed.

    Training: files repeated and shuffled, read interleaved (cycle min(4, #files)), records
    shuffled in a buffer of 100, batched with drop_remainder. Evaluation: the files in order,
    repeated, batched with drop_remainder (the original does the same).

    Args:
        files: list of TFRecord paths.
        max_seq_length: length of input_ids etc.
        max_predictions_per_seq: length of masked_lm_*.
        batch_size: global batch size.
        is_training: training or evaluation order.
        seed: shuffle seed (training); the same seed gives the same batches.
        skip_batches: global batches to skip (resume at the position of a checkpoint).
        batching: this pipeline's part of each global batch (see `Batching`; None: one
            pipeline of global batches).

    Returns:
        A `tf.data.Dataset` of dicts of `[batch, ...]` tensors (int32 and float32): global
        batches, or per-replica batches when `batching` splits them.
    """
    batching = batching or Batching()
    if batching.group_batches:
        raise ValueError("Grouping by length is for fine-tuning input only.")
    spec = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    files, own = _pipeline_files(list(files), batching)
    if own is not batching:
        # This pipeline's stream is its share of the corpus: its share of each global batch.
        batch_size = batching.check_batch_size(batch_size) * batching.replicas
    if is_training:
        ds = tf.data.Dataset.from_tensor_slices(files).repeat()
        ds = ds.shuffle(len(files), seed=seed)
        ds = ds.interleave(
            tf.data.TFRecordDataset,
            cycle_length=min(4, len(files)),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        ds = ds.shuffle(100, seed=seed)
    else:
        ds = tf.data.TFRecordDataset(files).repeat()
    if skip_batches:
        # Skipping raw records before parsing costs only the reads.
        ds = ds.skip(skip_batches * batch_size)
    return _parsed_batches(ds, spec, batch_size, True, own)


def fine_tuning_dataset(
    path, spec, batch_size, is_training, seed=None, skip_batches=0, batching=None, beside=None
):
    """The original run_classifier / run_squad input pipeline over one file of records.

    Training: records repeated, shuffled in a buffer of 100 (the file itself is in the order the
    examples were read, as the original writes it) and batched with drop_remainder. Evaluation and
    prediction: the records once, in order, the last batch kept even if short (or padded to a
    whole batch, see `Batching.pad_to_whole_batches`).

    Args:
        path: a TFRecord file (or a list of them).
        spec: the record schema, name -> `tf.io.FixedLenFeature` (e.g.
            `data.glue.records.classifier_feature_spec`).
        batch_size: global batch size.
        is_training: training or evaluation order.
        seed: shuffle seed (training); the same seed gives the same batches.
        skip_batches: training batches to skip (resume at the position of a checkpoint).
        batching: this pipeline's part of each global batch (see `Batching`; None: one
            pipeline of global batches).
        beside: None, or a `data.records.teacher_outputs.BesideRecords`: a file with one
            record per record of `path`, in the same order, whose features join each example's
            (read zipped, before the shuffle).

    Returns:
        A `tf.data.Dataset` of dicts of `[batch, ...]` tensors, int64 features as int32; when
        padding, `is_real_example` int32 `[batch]` marks the real examples.
    """
    batching = batching or Batching()
    ds = tf.data.TFRecordDataset(path)
    if beside is not None:
        ds = tf.data.Dataset.zip((ds, tf.data.TFRecordDataset(beside.path)))
        spec = (spec, beside.spec)
    if is_training:
        ds = ds.repeat().shuffle(100, seed=seed)
        # Grouping resumes from the start of the window of the next batch.
        window = batching.group_batches or 1
        if skip_batches >= window:
            ds = ds.skip(skip_batches // window * window * batch_size)
    elif batching.group_batches:
        raise ValueError("Grouping by length is for training input only.")
    return _parsed_batches(ds, spec, batch_size, is_training, batching, skip_batches)
