"""run_ner's TFRecord layout: the schema, the writer and the reader.

Each record is one window: `input_ids`, `input_mask`, `segment_ids` and `label_ids` (-1 where
a position carries no tag), all int64 `[max_seq_length]`.
"""

import tensorflow as tf

from data.records.example_files import int64_feature, write_examples
from data.records.input_pipeline import fine_tuning_dataset

_FEATURES = ("input_ids", "input_mask", "segment_ids", "label_ids")


def ner_feature_spec(max_seq_length):
    """The features of an NER TFRecord, for `tf.io.parse_example`."""
    return {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in _FEATURES}


def write_ner_tfrecord(windows, path):
    """Writes `data.ner.features.NerWindow`s as TFRecords, atomically."""
    records = ({name: int64_feature(getattr(w, name)) for name in _FEATURES} for w in windows)
    write_examples(path, records, count=len(windows))


def ner_dataset(
    path,
    max_seq_length,
    batch_size,
    is_training,
    seed=None,
    skip_batches=0,
    batching=None,
    beside=None,
):
    """The fine-tuning input pipeline over a file of `write_ner_tfrecord`.

    See `data.records.input_pipeline.fine_tuning_dataset` for the order, batching and
    `beside` (records joining each example's, e.g. a teacher's outputs).

    Returns:
        A `tf.data.Dataset` of dicts of int32 `[batch, max_seq_length]` tensors.
    """
    spec = ner_feature_spec(max_seq_length)
    return fine_tuning_dataset(
        path, spec, batch_size, is_training, seed, skip_batches, batching, beside
    )
