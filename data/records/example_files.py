"""Fine-tuning TFRecord files of `tf.train.Example`, written atomically with TensorFlow's writer.

The runners write these files on every run (as the original does) from already converted
features; the records land under their final name only once all of them are written, so an
interrupted run never leaves a truncated file that a later run would read. Each record's
feature map is serialized in sorted key order (protobuf's deterministic encoding): the same
examples give the same bytes on every run, whatever the process's hash seed.
"""

import tensorflow as tf
from absl import logging

from fileio.atomic import atomic_output

_LOG_EVERY = 10000


def int64_feature(values):
    """A `tf.train.Feature` holding int64 `values` (any iterable of ints)."""
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def float_feature(values):
    """A `tf.train.Feature` holding float32 `values`."""
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def write_examples(path, records, count=None):
    """Writes each record (dict name -> `tf.train.Feature`) as one `tf.train.Example`.

    Args:
        path: output file (any file system TensorFlow knows).
        records: iterable of feature dicts.
        count: number of records, to log "Writing example i of count" every 10000 as the
            original run_classifier does; None logs nothing.
    """
    with atomic_output(path) as temp_path, tf.io.TFRecordWriter(temp_path) as writer:
        for index, record in enumerate(records):
            if count is not None and index % _LOG_EVERY == 0:
                logging.info("Writing example %d of %d", index, count)
            example = tf.train.Example(features=tf.train.Features(feature=record))
            writer.write(example.SerializeToString(deterministic=True))
