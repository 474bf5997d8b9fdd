"""The shared inference path: one trace for every cut length, and reading ahead on a thread."""

import threading

import numpy as np
import pytest
import tensorflow as tf

from training import inference
from training.strategy import create_strategy


def _cut_batches():
    """Batches of 3 rows cut to different lengths, the last one short, as prediction reads."""
    rows = [np.arange(1, n + 1) for n in (5, 2, 7, 3, 3, 1, 8)]
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(rows), output_signature=tf.TensorSpec([None], tf.int32)
    )
    return dataset.padded_batch(3).map(lambda ids: {"input_ids": ids})


def test_one_trace_serves_every_cut_length():
    traces = []

    def outputs(features):
        traces.append(features["input_ids"].shape)
        return {"total": tf.reduce_sum(features["input_ids"], axis=1)}

    step = inference.make_predict_step(create_strategy("one_device"), outputs)
    batches = list(inference.predictions(step, iter(_cut_batches())))
    assert [b["total"].tolist() for b in batches] == [[15, 3, 28], [6, 6, 1], [36]]
    # Three lengths (7, 3, 8) and a short last batch, one trace with the lengths left open.
    assert len(traces) == 1 and traces[0].as_list() == [None, None]


def _numbers(count, fail_at=None, produced=None):
    for i in range(count):
        if i == fail_at:
            raise ValueError(f"bad record {i}")
        if produced is not None:
            produced.append(i)
        yield i


def _ahead_threads():
    return [t for t in threading.enumerate() if t.name == "predictions_ahead"]


def test_ahead_yields_every_item_in_order():
    step = inference.make_predict_step(
        create_strategy("one_device"),
        lambda f: {"total": tf.reduce_sum(f["input_ids"], axis=1)},
    )
    plain = list(inference.predictions(step, iter(_cut_batches())))
    read_ahead = list(inference.ahead(inference.predictions(step, iter(_cut_batches())), 2))
    assert [b["total"].tolist() for b in read_ahead] == [b["total"].tolist() for b in plain]
    assert list(inference.ahead(_numbers(100), 3)) == list(range(100))
    assert not _ahead_threads()


def test_ahead_raises_the_readers_error_in_the_caller():
    seen = []
    with pytest.raises(ValueError, match="bad record 4"):
        for item in inference.ahead(_numbers(10, fail_at=4)):
            seen.append(item)
    assert seen == [0, 1, 2, 3]
    assert not _ahead_threads()


def test_ahead_stops_reading_when_the_caller_stops():
    produced = []
    items = inference.ahead(_numbers(1000, produced=produced), depth=2)
    assert next(items) == 0
    items.close()
    assert not _ahead_threads()
    # The item handed over, the queue's 2 and the one the thread held when told to stop.
    assert len(produced) <= 4
