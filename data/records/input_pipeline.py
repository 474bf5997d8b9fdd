"""tf.data readers for the TFRecord files of every task (one place, not one per runner).

`pretraining_dataset` reads create_pretraining_data.py's files; `fine_tuning_dataset` reads one
file of a task's records given its schema (`data.glue.records`, `data.squad.records`).

Every reader first defines the global stream of serialized records (its order depends only on
the files and the seed) and cuts it into global batches of `batch_size`. A `Batching` then says
which part of each global batch this input pipeline yields: with several pipelines (one per
worker or TPU host) and replicas, each pipeline keeps its contiguous slice of every global batch,
split into one batch per replica it feeds, so the replicas of one step together see exactly the
global batch one device would, whatever the number of workers.
"""

import dataclasses

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Batching:
    """Which part of each global batch one input pipeline yields, and how.

    Attributes:
        num_pipelines: input pipelines of the whole cluster (one per worker or TPU host).
        pipeline_index: this pipeline, in `[0, num_pipelines)`.
        replicas: replicas this pipeline feeds. With one pipeline and one replica the
            pipeline yields whole global batches; otherwise per-replica batches of
            `batch_size / (num_pipelines * replicas)` examples, `replicas` of them per step.
        pad_to_whole_batches: for finite evaluation and prediction sets: the last global
            batch is filled up to `batch_size` with copies of its first record whose
            `is_real_example` is 0 (the original's `PaddingInputExample`), so that every batch
            has one static shape, as a TPU needs.
        background: parse and prefetch on tf.data threads (False: on the consumer's thread).
    """

    num_pipelines: int = 1
    pipeline_index: int = 0
    replicas: int = 1
    pad_to_whole_batches: bool = False
    background: bool = True

    @property
    def splits(self):
        """Parts each global batch is cut into (one per replica of the cluster)."""
        return self.num_pipelines * self.replicas

    def local(self):
        """The same batching for a pipeline that reads a stream of its own (file sharding)."""
        return dataclasses.replace(self, num_pipelines=1, pipeline_index=0)

    def check_batch_size(self, batch_size, flag="batch size"):
        """Raises ValueError unless `batch_size` splits evenly over the cluster's replicas."""
        if batch_size % self.splits:
            raise ValueError(
                f"The {flag} {batch_size} is not divisible by the number of replicas "
                f"({self.splits}); pass a multiple of {self.splits}."
            )
        return batch_size // self.splits


def _pad_to(batch_size):
    def pad(records):
        count = tf.shape(records)[0]
        missing = batch_size - count
        real = tf.concat([tf.ones([count], tf.int32), tf.zeros([missing], tf.int32)], 0)
        filled = tf.concat([records, tf.fill([missing], records[0])], 0)
        # Reshaped so that the batch dimension is static, as a TPU needs.
        return {
            "records": tf.reshape(filled, [batch_size]),
            "is_real_example": tf.reshape(real, [batch_size]),
        }

    return pad


def _cut(ds, batch_size, drop_remainder, batching):
    """Serialized records -> this pipeline's batches, as dicts: `records` [b] and, when padding,
    `is_real_example` [b]."""
    if batching.pad_to_whole_batches:
        ds = ds.batch(batch_size).map(_pad_to(batch_size))
    else:
        if batching.splits > 1 and not drop_remainder:
            raise ValueError(
                "Several replicas need whole batches: use drop_remainder or pad_to_whole_batches."
            )
        ds = ds.batch(batch_size, drop_remainder=drop_remainder).map(lambda r: {"records": r})
    if batching.splits == 1:
        return ds
    per_replica = batching.check_batch_size(batch_size)
    first = batching.pipeline_index * batching.replicas
    last = first + batching.replicas

    def own_slice(batch):
        # [B] -> [splits, b]: row k is replica k's part; this pipeline keeps its rows.
        return {
            k: tf.reshape(v, [batching.splits, per_replica])[first:last] for k, v in batch.items()
        }

    return ds.map(own_slice).unbatch()


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


def check_record_lengths(path, feature_spec, producer="create_pretraining_data.py"):
    """Reads the first record of `path` and checks every fixed-length feature against the spec,
    so that a mismatch is one clear error rather than a shape failure deep inside TF.

    Raises:
        ValueError: naming the file, the feature, both lengths and the flag to fix.
    """
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
        return
    raise ValueError(f"{path} holds no records.")


def _decode_batches(ds, feature_spec, background):
    """Parses batches of serialized records; prefetches them on background threads if asked."""

    def decode(batch):
        # One vectorised parse per batch costs a fraction of per-record parsing, and the CPU
        # that feeds the model is the one that runs it.
        example = tf.io.parse_example(batch["records"], feature_spec)
        # TPUs only take int32; the files hold int64.
        example = {
            k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()
        }
        if "is_real_example" in batch:
            real = batch["is_real_example"]
            if "is_real_example" in example:
                real *= tf.reshape(example["is_real_example"], tf.shape(real))
            example["is_real_example"] = real
        return example

    if not background:
        # Parsed on the caller's thread when asked for: no tf.data thread runs beside the model.
        return ds.map(decode)
    ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(tf.data.AUTOTUNE)


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
    ds = _cut(ds, batch_size, True, own)
    return _decode_batches(ds, spec, own.background)


def fine_tuning_dataset(
    path, spec, batch_size, is_training, seed=None, skip_batches=0, batching=None
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

    Returns:
        A `tf.data.Dataset` of dicts of `[batch, ...]` tensors, int64 features as int32; when
        padding, `is_real_example` int32 `[batch]` marks the real examples.
    """
    batching = batching or Batching()
    ds = tf.data.TFRecordDataset(path)
    if is_training:
        ds = ds.repeat().shuffle(100, seed=seed)
        if skip_batches:
            ds = ds.skip(skip_batches * batch_size)
    ds = _cut(ds, batch_size, is_training, batching)
    return _decode_batches(ds, spec, batching.background)
