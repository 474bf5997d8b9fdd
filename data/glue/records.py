"""The original run_classifier's TFRecord layout: the schema, the writer and the reader."""

import tensorflow as tf

from data.records.example_files import float_feature, int64_feature, write_examples
from data.records.input_pipeline import fine_tuning_dataset


def classifier_feature_spec(max_seq_length, is_regression=False, multi_labels=0):
    """The features of a classifier TFRecord, for `tf.io.parse_example`.

    Args:
        max_seq_length: length of input_ids, input_mask and segment_ids.
        is_regression: `label_ids` is float32 rather than int64.
        multi_labels: for a multi-label task, its number of labels: `label_ids` is the int64
            multi-hot `[multi_labels]` (0: one label id per record, the original's layout).

    Returns:
        dict of feature name -> `tf.io.FixedLenFeature`.
    """
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature(
            [multi_labels] if multi_labels else [], tf.float32 if is_regression else tf.int64
        ),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


def write_classifier_tfrecord(features, path, is_regression=None):
    """Writes features as the original's TFRecord file, atomically.

    Each record holds `input_ids`, `input_mask`, `segment_ids` (int64 [max_seq_length]),
    `label_ids` (int64 [1], float32 for regression, the int64 multi-hot [num_labels] of a
    multi-label example) and `is_real_example` (int64 [1]). The file
    appears under `path` only once complete; "Writing example %d of %d" is logged every 10000.

    Args:
        features: list of `ClassifierFeatures`.
        path: output file (any file system TensorFlow knows).
        is_regression: float labels; None to decide from the labels' type.
    """
    if is_regression is None:
        is_regression = any(isinstance(f.label_id, float) for f in features)
    label_feature = float_feature if is_regression else int64_feature
    records = (
        {
            "input_ids": int64_feature(f.input_ids),
            "input_mask": int64_feature(f.input_mask),
            "segment_ids": int64_feature(f.segment_ids),
            "label_ids": label_feature(
                list(f.label_id)
                if isinstance(f.label_id, list)
                else [float(f.label_id) if is_regression else f.label_id]
            ),
            "is_real_example": int64_feature([int(f.is_real_example)]),
        }
        for f in features
    )
    write_examples(path, records, count=len(features))


def classifier_dataset(
    path,
    max_seq_length,
    is_regression,
    batch_size,
    is_training,
    seed=None,
    skip_batches=0,
    batching=None,
    multi_labels=0,
    beside=None,
):
    """The original run_classifier input pipeline over a file of `write_classifier_tfrecord`.

    See `data.records.input_pipeline.fine_tuning_dataset` for the order and batching;
    `multi_labels` as for `classifier_feature_spec`; `beside` (records joining each
    example's, e.g. a teacher's outputs) as for `fine_tuning_dataset`.

    Returns:
        A `tf.data.Dataset` of dicts: `input_ids`, `input_mask`, `segment_ids` int32
        `[batch, max_seq_length]`, `label_ids` int32 (float32 for regression) `[batch]`,
        `is_real_example` int32 `[batch]` (`label_ids` `[batch, multi_labels]` for a
        multi-label task).
    """
    spec = classifier_feature_spec(max_seq_length, is_regression, multi_labels)
    return fine_tuning_dataset(
        path, spec, batch_size, is_training, seed, skip_batches, batching, beside
    )
