"""Writes small, learnable pretraining TFRecords in create_pretraining_data's format."""

import numpy as np
import tensorflow as tf

from tests.helpers.tiny_config import TINY_CONFIG


def _ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _floats(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))


def write_records(path, num_examples=256, seq_length=32, max_predictions=5, seed=0):
    """Examples whose A segment repeats one token (so a masked token is a copy of its
    neighbours) and whose B segment repeats it too (IsNext, label 0) or is random (label 1).
    Some examples mask fewer than `max_predictions` tokens, so masked_lm_weights vary."""
    rng = np.random.default_rng(seed)
    vocab = TINY_CONFIG["vocab_size"]
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(num_examples):
            n = int(rng.integers(10, seq_length + 1))
            token = int(rng.integers(5, vocab))
            ids = [1] + [token] * (n - 2) + [2]
            label = int(rng.integers(0, 2))
            half = n // 2
            if label:
                ids = ids[:half] + [int(x) for x in rng.integers(5, vocab, n - half - 1)] + [2]
            count = int(rng.integers(2, max_predictions + 1))
            positions = sorted(int(p) for p in rng.choice(np.arange(1, n - 1), count, False))
            masked_ids = [ids[p] for p in positions]
            for p in positions:
                ids[p] = 3
            pad, pred_pad = seq_length - n, max_predictions - count
            feature = {
                "input_ids": _ints(ids + [0] * pad),
                "input_mask": _ints([1] * n + [0] * pad),
                "segment_ids": _ints([0] * half + [1] * (n - half) + [0] * pad),
                "masked_lm_positions": _ints(positions + [0] * pred_pad),
                "masked_lm_ids": _ints(masked_ids + [0] * pred_pad),
                "masked_lm_weights": _floats([1.0] * count + [0.0] * pred_pad),
                "next_sentence_labels": _ints([label]),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def records_dataset_fn(data):
    """The Trainer's `dataset_fn` over `data/data.tfrecord` (from `write_records`): batches of
    32, sequence 32, 5 predictions, seed 7."""
    from data.records import input_pipeline

    def dataset_fn(skip, batching):
        files = [str(data / "data.tfrecord")]
        return input_pipeline.pretraining_dataset(
            files, 32, 5, 8, True, seed=7, skip_batches=skip, batching=batching
        )

    return dataset_fn
