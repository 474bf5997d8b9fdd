"""Input on one CPU replica: plain iterators without tf.data's autotuning, whose thread made
each finished training run or prediction pass wait (up to a minute) while its iterator was
deleted; the batches unchanged."""

import numpy as np
import tensorflow as tf

from data.records.batching import Batching
from training.distributed_input import inference_batches, whole_batches
from training.strategy import create_strategy


def _dataset(batching):
    return tf.data.Dataset.range(10).map(lambda x: {"x": x}).batch(4)


def test_caller_thread_input_has_no_autotuning():
    strategy = create_strategy("one_device")
    finite = inference_batches(strategy, _dataset, Batching())
    endless = whole_batches(strategy, lambda b: _dataset(b).repeat(), is_training=False)
    training = whole_batches(strategy, lambda b: _dataset(b).repeat(), is_training=True)
    for iterator in (finite, endless, training):
        assert iterator._dataset.options().autotune.enabled is False
    # The batches themselves are untouched.
    assert [b["x"].numpy().tolist() for b in finite] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    for iterator in (endless, training):
        np.testing.assert_array_equal(next(iterator)["x"], [0, 1, 2, 3])
