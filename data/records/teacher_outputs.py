"""The teacher's outputs stored beside a task's training records, for distillation.

`teacher_outputs.tf_record` holds one record per record of `train.tf_record`, in the same order:
`teacher_logits` (float32, the teacher's logits of that record, zero-padded to
`max_seq_length` where they are per token) and `gold` (int64: 1 if the record's example has a
gold label, 0 for unlabelled transfer text). The records are written as the teacher's
predictions stream in, and read zipped with the training records
(`input_pipeline.fine_tuning_dataset`'s `beside`), so that each shuffled training example
carries its own teacher outputs and no epoch runs the teacher again.
"""

import collections

import numpy as np
import tensorflow as tf

from data.records.example_files import float_feature, int64_feature, write_examples

TEACHER_OUTPUTS_FILE = "teacher_outputs.tf_record"

# A file of records that go with those of another file, one for one: its path and schema.
BesideRecords = collections.namedtuple("BesideRecords", ["path", "spec"])


def teacher_feature_spec(logits_shape):
    """The schema of `teacher_outputs.tf_record`, for `tf.io.parse_example`.

    Args:
        logits_shape: one record's logits, e.g. `(C,)`, `(max_seq_length, C)` or
            `(2, max_seq_length)`.
    """
    return {
        "teacher_logits": tf.io.FixedLenFeature(list(logits_shape), tf.float32),
        "gold": tf.io.FixedLenFeature([], tf.int64),
    }


def _padded(logits, shape):
    """`logits` zero-padded to `shape` (a batch cut to its longest sequence gives fewer
    positions)."""
    logits = np.asarray(logits, np.float32)
    if logits.shape == tuple(shape):
        return logits
    pad = [(0, int(n - m)) for n, m in zip(shape, logits.shape, strict=True)]
    if any(p < 0 for _, p in pad):
        raise ValueError(f"Teacher logits of shape {logits.shape} exceed {tuple(shape)}.")
    return np.pad(logits, pad)


def write_teacher_records(path, logits_rows, gold, logits_shape):
    """Writes the teacher's outputs as they come, atomically.

    Args:
        path: output file (any file system TensorFlow knows).
        logits_rows: iterable of float arrays, one per training record, in its order.
        gold: sequence of 0/1, one per training record.
        logits_shape: the shape each row is padded to (`teacher_feature_spec`).

    Returns:
        The number of records written.

    Raises:
        RuntimeError: the rows do not number one per training record.
    """
    counted = [0]

    def records():
        for logits, is_gold in zip(logits_rows, gold, strict=True):
            counted[0] += 1
            yield {
                "teacher_logits": float_feature(_padded(logits, logits_shape).reshape(-1)),
                "gold": int64_feature([int(is_gold)]),
            }

    try:
        write_examples(path, records(), count=len(gold))
    except ValueError as err:
        raise RuntimeError(
            f"The teacher gave outputs for {counted[0]}+ records, not {len(gold)}."
        ) from err
    return counted[0]


def read_teacher_records(path, logits_shape):
    """The stored outputs, in order: (logits float32 `[N, *logits_shape]`, gold int64 `[N]`)."""
    spec = teacher_feature_spec(logits_shape)
    logits, gold = [], []
    for batch in tf.data.TFRecordDataset(path).batch(256):
        parsed = tf.io.parse_example(batch, spec)
        logits.append(parsed["teacher_logits"].numpy())
        gold.append(parsed["gold"].numpy())
    if not logits:
        return np.zeros([0, *logits_shape], np.float32), np.zeros([0], np.int64)
    return np.concatenate(logits), np.concatenate(gold)
