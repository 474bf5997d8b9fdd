"""Each rule that exists twice, as Python for the runners (`data/`) and as TensorFlow ops for the
exports (the `*_graph` twins), run both ways on the same generated cases.

The cases are random (seeded) lengths, budgets, strides and logits, a few hundred per rule, all
of a rule's cases in one batch where the graph twin takes one; any difference fails.
"""

import numpy as np
import pytest
import tensorflow as tf

from data.glue.long_inputs import WINDOW_AGGREGATIONS, aggregate_windows, head_and_tail, pair_room
from data.tokenization.packing import truncated_lengths
from data.tokenization.preprocessor import truncated_lengths_graph
from data.windows import max_context_windows, sliding_windows
from serving.exports.long_inputs import (
    aggregate_windows_graph,
    head_and_tail_graph,
    pair_room_graph,
)
from serving.exports.windows import max_context_windows_graph, sliding_windows_graph

NUM_CASES = 300


def _rng(salt):
    return np.random.default_rng(47_000 + salt)


def _int64(values):
    return tf.constant(np.asarray(values, np.int64))


def _window_cases():
    rng = _rng(1)
    # Python ints, so that a difference reads as plain tuples.
    num_tokens = rng.integers(0, 80, NUM_CASES).tolist()
    max_tokens = rng.integers(1, 24, NUM_CASES).tolist()
    stride = rng.integers(1, 30, NUM_CASES).tolist()
    return num_tokens, max_tokens, stride


def test_sliding_windows_twins_agree():
    num_tokens, max_tokens, stride = _window_cases()
    starts, lengths = sliding_windows_graph(_int64(num_tokens), _int64(max_tokens), _int64(stride))
    graph = [
        list(zip(row_starts, row_lengths, strict=True))
        for row_starts, row_lengths in zip(starts.to_list(), lengths.to_list(), strict=True)
    ]
    python = [sliding_windows(*case) for case in zip(num_tokens, max_tokens, stride, strict=True)]
    assert graph == python


def test_max_context_windows_twins_agree():
    num_tokens, max_tokens, stride = _window_cases()
    starts, lengths = sliding_windows_graph(_int64(num_tokens), _int64(max_tokens), _int64(stride))
    # Every piece of every sequence, each with the window index within its own sequence.
    rows = np.repeat(np.arange(NUM_CASES), num_tokens)
    positions = np.concatenate([np.arange(n) for n in num_tokens])
    chosen = max_context_windows_graph(_int64(positions), _int64(rows), starts, lengths)
    local = (chosen - tf.gather(starts.row_splits, _int64(rows))).numpy().tolist()
    python = []
    for case in zip(num_tokens, max_tokens, stride, strict=True):
        python += max_context_windows(sliding_windows(*case), case[0])
    assert local == python


@pytest.mark.parametrize("head_tokens", [None, 0, 1, 5, 40])
def test_head_and_tail_twins_agree(head_tokens):
    rng = _rng(2)
    lengths = rng.integers(0, 70, NUM_CASES)
    keep = rng.integers(0, 70, NUM_CASES)
    rows = [list(range(100, 100 + n)) for n in lengths]
    ids = tf.ragged.constant(rows, dtype=tf.int64, ragged_rank=1, row_splits_dtype=tf.int64)
    graph = head_and_tail_graph(ids, _int64(keep), head_tokens).to_list()
    assert graph == [head_and_tail(row, k, head_tokens) for row, k in zip(rows, keep, strict=True)]


@pytest.mark.parametrize(
    "python_twin, graph_twin, limits",
    [
        (truncated_lengths, truncated_lengths_graph, range(0, 40)),  # the budget of both texts
        (pair_room, pair_room_graph, range(5, 45)),  # max_seq_length
    ],
    ids=["truncated_lengths", "pair_room"],
)
def test_pair_length_twins_agree(python_twin, graph_twin, limits):
    rng = _rng(3)
    for limit in limits:
        len_a, len_b = rng.integers(0, 60, (2, 20))
        first, second = graph_twin(_int64(len_a), _int64(len_b), limit)
        graph = list(zip(first.numpy().tolist(), second.numpy().tolist(), strict=True))
        assert graph == [python_twin(a, b, limit) for a, b in zip(len_a, len_b, strict=True)]


def _aggregation_cases(salt):
    """(logits, owners, num_examples) batches: 1 to 4 windows an example, 2 to 5 classes."""
    rng = _rng(salt)
    for _ in range(25):
        num_examples = int(rng.integers(1, 8))
        owners = np.repeat(np.arange(num_examples), rng.integers(1, 5, num_examples))
        num_classes = int(rng.integers(2, 6))
        logits = rng.normal(0.0, 3.0, (len(owners), num_classes)).astype(np.float32)
        yield logits, owners, num_examples


@pytest.mark.parametrize("how", WINDOW_AGGREGATIONS)
def test_aggregate_windows_twins_agree(how):
    for logits, owners, num_examples in _aggregation_cases(5):
        python = aggregate_windows(logits, owners, num_examples, how)
        graph = aggregate_windows_graph(logits, _int64(owners), num_examples, how).numpy()
        np.testing.assert_allclose(graph, python, rtol=0, atol=1e-6)


@pytest.mark.parametrize("how", ["mean", "max"])
def test_aggregate_windows_twins_agree_for_regression(how):
    for logits, owners, num_examples in _aggregation_cases(6):
        scores = logits[:, :1]
        python = aggregate_windows(scores, owners, num_examples, how, is_regression=True)
        graph = aggregate_windows_graph(
            scores, _int64(owners), num_examples, how, is_regression=True
        ).numpy()
        np.testing.assert_allclose(graph, python, rtol=0, atol=1e-6)
