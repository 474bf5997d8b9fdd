"""`data.windows` as TensorFlow ops, for exports that cut long inputs in the graph (NER, SQuAD):
the same windows and the same max-context choice, over a batch of sequences.

Each `*_graph` function is the twin of the `data.windows` function without the suffix;
tests/serving/test_twin_parity.py runs both on the same cases.
"""

import tensorflow as tf


def first_max(values, axis=1):
    """Index (int64) of the first maximum along `axis`: ties go to the lowest index, as the
    first best in a Python loop or a stable sort."""
    best = tf.reduce_max(values, axis=axis, keepdims=True)
    index = tf.range(tf.shape(values, out_type=tf.int64)[axis])
    return tf.reduce_min(tf.where(values == best, index, tf.int64.max), axis=axis)


def half_window_stride_graph(window):
    """The graph twin of `data.windows.half_window_stride`.

    Args:
        window: int64 [B], pieces per window.

    Returns:
        int64 [B].
    """
    return tf.maximum(window // 2, 1)


def sliding_windows_graph(num_tokens, max_tokens, stride):
    """The graph twin of `data.windows.sliding_windows`, per row.

    Args:
        num_tokens: int64 [B], sequence lengths.
        max_tokens: window length: a Python int or int64 [B].
        stride: pieces between window starts: a Python int or int64 [B].

    Returns:
        (starts, lengths): int64 ragged [B, (k)] each; no window for an empty sequence.
    """
    # Every window but the last is `max_tokens` long, so they start min(stride, max_tokens)
    # apart.
    max_tokens = tf.cast(max_tokens, tf.int64)
    stride = tf.minimum(tf.cast(stride, tf.int64), max_tokens)
    extra = (tf.maximum(num_tokens - max_tokens, 0) + stride - 1) // stride
    count = tf.where(num_tokens > 0, extra + 1, 0)
    starts = tf.ragged.range(count) * tf.reshape(stride, [-1, 1])
    lengths = tf.minimum(tf.expand_dims(num_tokens, 1) - starts, tf.reshape(max_tokens, [-1, 1]))
    return starts, lengths


def max_context_windows_graph(positions, rows, starts, lengths):
    """The graph twin of `data.windows.max_context_windows`, for chosen pieces: the window
    (batch-wide index into `starts.flat_values`) where each piece has the most context.

    The score is 100 * min(left, right context) + window length: 100 times the original's, in
    integers, so the same window wins (the first of equal ones).

    Args:
        positions: int64 [N], each piece's position in its sequence.
        rows: int64 [N], each piece's sequence.
        starts, lengths: the windows, as `sliding_windows_graph` returns them.

    Returns:
        int64 [N].
    """
    start, length = tf.gather(starts, rows), tf.gather(lengths, rows)
    p = tf.expand_dims(positions, 1)
    inside = tf.logical_and(start <= p, p < start + length)
    score = 100 * tf.minimum(p - start, start + length - 1 - p) + length
    none = tf.constant(-1, tf.int64)
    score = tf.where(inside, score, none).to_tensor(default_value=none)
    return tf.gather(starts.row_splits, rows) + first_max(score)
