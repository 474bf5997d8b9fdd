"""The original run_squad's TFRecord layout: the schema, the writer and the reader."""

import tensorflow as tf

from data.records.example_files import int64_feature, write_examples
from data.records.input_pipeline import fine_tuning_dataset


def squad_feature_spec(max_seq_length, is_training):
    """The features of a SQuAD TFRecord, for `tf.io.parse_example`.

    `is_impossible` is written for training but, as in the original, never read.

    Args:
        max_seq_length: length of input_ids, input_mask and segment_ids.
        is_training: add the scalar `start_positions` and `end_positions`.

    Returns:
        dict of feature name -> `tf.io.FixedLenFeature`.
    """
    spec = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
    }
    if is_training:
        spec["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
        spec["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
    return spec


def _record(feature, is_training):
    record = {
        "unique_ids": int64_feature([feature.unique_id]),
        "input_ids": int64_feature(feature.input_ids),
        "input_mask": int64_feature(feature.input_mask),
        "segment_ids": int64_feature(feature.segment_ids),
    }
    if is_training:
        record["start_positions"] = int64_feature([feature.start_position])
        record["end_positions"] = int64_feature([feature.end_position])
        record["is_impossible"] = int64_feature([int(bool(feature.is_impossible))])
    return record


def write_squad_tfrecord(features, path, is_training):
    """Writes features as the original's TFRecord file, atomically.

    Each record holds `unique_ids` (int64 [1]), `input_ids`, `input_mask`, `segment_ids`
    (int64 [max_seq_length]) and, for training, `start_positions`, `end_positions` and
    `is_impossible` (int64 [1] each). The file appears under `path` only once complete.

    Args:
        features: list of `data.squad.features.SquadFeatures`.
        path: output file (any file system TensorFlow knows).
        is_training: write the labels.
    """
    write_examples(path, (_record(f, is_training) for f in features))


def squad_dataset(
    path,
    max_seq_length,
    batch_size,
    is_training,
    seed=None,
    skip_batches=0,
    batching=None,
    beside=None,
):
    """The original run_squad input pipeline over a file of `write_squad_tfrecord`.

    See `data.records.input_pipeline.fine_tuning_dataset` for the order, batching and
    `beside` (records joining each example's, e.g. a teacher's outputs).

    Returns:
        A `tf.data.Dataset` of dicts of int32 tensors: `unique_ids` `[batch]`, `input_ids`,
        `input_mask`, `segment_ids` `[batch, max_seq_length]`, and for training
        `start_positions`, `end_positions` `[batch]`.
    """
    spec = squad_feature_spec(max_seq_length, is_training)
    return fine_tuning_dataset(
        path, spec, batch_size, is_training, seed, skip_batches, batching, beside
    )
