"""`data.glue.long_inputs` as TensorFlow ops, for the classifier export: head and tail cuts,
the windows of a long text and the aggregation of their predictions, over a batch of texts.

Each `*_graph` function is the twin of the `data.glue.long_inputs` function without the
suffix and gives what it gives for every row, so an exported model answers as run_classifier
evaluates and predicts with the same `--long_inputs`; tests/serving/test_twin_parity.py runs
both on the same cases.
"""

import tensorflow as tf

from data.tokenization.preprocessor import pack_inputs, row_prefix, truncated_lengths_graph
from serving.exports.windows import first_max, half_window_stride_graph, sliding_windows_graph


def _empty_like_rows(lengths):
    """int64 ragged [B, (0)]: no ids in any row."""
    return tf.RaggedTensor.from_row_lengths(
        tf.zeros([0], tf.int64), tf.zeros_like(lengths), validate=False
    )


def head_and_tail_graph(ids, keep, head_tokens=None):
    """The graph twin of `data.glue.long_inputs.head_and_tail`, per row: the first `head` and
    the last `keep - head` ids of a row longer than `keep` (head = min(head_tokens, keep), or
    keep // 4 for None); a row that fits stays whole.

    Args:
        ids: int ragged [B, (n)].
        keep: int64 [B], ids to keep per row.
        head_tokens: Python int or None.

    Returns:
        ragged [B, (min(n, keep))] like `ids`.
    """
    keep = tf.cast(keep, tf.int64)
    head = (
        keep // 4 if head_tokens is None else tf.minimum(tf.constant(head_tokens, tf.int64), keep)
    )
    lengths = ids.row_lengths()
    positions = tf.ragged.range(lengths)
    tail_from = tf.expand_dims(lengths - (keep - head), 1)
    cut = tf.logical_or(positions < tf.expand_dims(head, 1), positions >= tail_from)
    fits = tf.expand_dims(lengths <= keep, 1)
    return tf.ragged.boolean_mask(ids, tf.logical_or(fits, cut))


def head_tail_inputs(ids_a, ids_b, max_seq_length, head_tokens, cls_id, sep_id):
    """`--long_inputs=head_tail` model inputs: the lengths the original truncation keeps, each
    cut text keeping its head and tail, packed as `pack_inputs` packs.

    Args:
        ids_a: int ragged [B, (n)], the pieces of the first texts.
        ids_b: int ragged [B, (m)] of the second texts, or None for single texts.
        max_seq_length: Python int S.
        head_tokens: pieces kept from a cut text's head; None for a quarter of those kept.
        cls_id, sep_id: the ids of `[CLS]` and `[SEP]`.

    Returns:
        dict of int32 [B, S]: `input_ids`, `input_mask`, `segment_ids`.
    """
    ids_a = tf.cast(ids_a, tf.int64)
    len_a = ids_a.row_lengths()
    ids_b = _empty_like_rows(len_a) if ids_b is None else tf.cast(ids_b, tf.int64)
    len_b = ids_b.row_lengths()
    # A second text without pieces reads as a single text (the original's `if tokens_b:`).
    is_pair = len_b > 0
    pair_a, pair_b = truncated_lengths_graph(len_a, len_b, max_seq_length - 3)
    keep_a = tf.where(is_pair, pair_a, tf.minimum(len_a, max_seq_length - 2))
    keep_b = tf.where(is_pair, pair_b, tf.zeros_like(len_b))
    # Cut to those lengths, the texts fit, so packing keeps them whole.
    part_a = head_and_tail_graph(ids_a, keep_a, head_tokens)
    part_b = head_and_tail_graph(ids_b, keep_b, head_tokens)
    return pack_inputs(part_a, part_b, max_seq_length, cls_id, sep_id)


def pair_room_graph(len_a, len_b, max_seq_length):
    """The graph twin of `data.glue.long_inputs.pair_room`, per row: the pieces of `text_a`
    kept in every window of a pair (what `text_b` leaves it, at least half the budget, its end
    cut) and the room left in each for `text_b`.

    Args:
        len_a, len_b: int64 [B], the pieces of the two texts.
        max_seq_length: Python int or int64 scalar S.

    Returns:
        (keep_a, room): int64 [B] each.
    """
    budget = tf.cast(max_seq_length, len_a.dtype) - 3
    keep_a, _ = truncated_lengths_graph(len_a, len_b, budget)
    return keep_a, budget - keep_a


def window_inputs(ids_a, ids_b, max_seq_length, doc_stride, cls_id, sep_id):
    """`--long_inputs=windows` model inputs: `data.glue.long_inputs.window_pieces` of every
    row, packed, the windows of a row one after another.

    A row with a second text keeps `pair_room` pieces of its first in every window and windows
    over the second; any other row windows over its first text, `max_seq_length - 2` pieces a
    window. A row whose windowed text is empty gets one window without it.

    Args:
        ids_a: int ragged [B, (n)], the pieces of the first texts.
        ids_b: int ragged [B, (m)] of the second texts, or None for single texts.
        max_seq_length: Python int S (at least 5 with `ids_b`, 3 without).
        doc_stride: pieces between window starts; None for half of each row's room.
        cls_id, sep_id: the ids of `[CLS]` and `[SEP]`.

    Returns:
        (inputs, rows): dict of int32 [K, S] (`input_ids`, `input_mask`, `segment_ids`) for
        the batch's K windows, and int64 [K], each window's row.
    """
    ids_a = tf.cast(ids_a, tf.int64)
    len_a = ids_a.row_lengths()
    ids_b = _empty_like_rows(len_a) if ids_b is None else tf.cast(ids_b, tf.int64)
    len_b = ids_b.row_lengths()
    is_pair = len_b > 0
    pair_keep_a, pair_room = pair_room_graph(len_a, len_b, max_seq_length)
    room = tf.where(is_pair, pair_room, max_seq_length - 2)
    none_a = tf.zeros_like(len_a)
    fixed = row_prefix(ids_a, tf.where(is_pair, pair_keep_a, none_a))
    # Rows without a second text window over their first; the other rows' B is empty there.
    windowed = tf.concat([row_prefix(ids_a, tf.where(is_pair, none_a, len_a)), ids_b], axis=1)
    num_windowed = windowed.row_lengths()
    stride = half_window_stride_graph(room) if doc_stride is None else doc_stride
    starts, lengths = sliding_windows_graph(num_windowed, room, stride)
    # One window, of no pieces, for an empty text: `[(0, 0)]` as window_pieces.
    none = tf.cast(tf.equal(num_windowed, 0), tf.int64)
    empty = tf.RaggedTensor.from_row_lengths(
        tf.zeros([tf.reduce_sum(none)], tf.int64), none, validate=False
    )
    starts = tf.concat([starts, empty], axis=1)
    lengths = tf.concat([lengths, empty], axis=1)

    rows = starts.value_rowids()
    begin = tf.gather(windowed.row_splits, rows) + starts.flat_values
    pieces = tf.gather(windowed.flat_values, tf.ragged.range(begin, begin + lengths.flat_values))
    window_is_pair = tf.gather(is_pair, rows)
    num_pieces = pieces.row_lengths()
    no_pieces = tf.zeros_like(num_pieces)
    part_a = tf.concat(
        [
            tf.gather(fixed, rows),
            row_prefix(pieces, tf.where(window_is_pair, no_pieces, num_pieces)),
        ],
        axis=1,
    )
    part_b = row_prefix(pieces, tf.where(window_is_pair, num_pieces, no_pieces))
    return pack_inputs(part_a, part_b, max_seq_length, cls_id, sep_id), rows


def aggregate_windows_graph(logits, rows, num_rows, how="mean", is_regression=False):
    """The graph twin of `data.glue.long_inputs.aggregate_windows`, with segment ops: each
    row's predictions from those of its windows.

    Args:
        logits: float [K, C] of the windows ([K, 1] for regression).
        rows: int64 [K], each window's row, non-decreasing; every row has a window.
        num_rows: int scalar B.
        how: "mean", "max", "mean_logits" or "vote".
        is_regression: one output per window.

    Returns:
        float32 [B, C] probabilities (the vote shares for "vote"), or [B] scores.
    """
    logits = tf.cast(logits, tf.float32)
    if is_regression:
        scores = logits[:, 0]
        if how == "max":
            return tf.math.unsorted_segment_max(scores, rows, num_rows)
        return tf.math.unsorted_segment_mean(scores, rows, num_rows)
    probabilities = tf.nn.softmax(logits, axis=-1)
    if how == "mean":
        return tf.math.unsorted_segment_mean(probabilities, rows, num_rows)
    if how == "mean_logits":
        return tf.nn.softmax(tf.math.unsorted_segment_mean(logits, rows, num_rows), axis=-1)
    if how == "max":
        best = tf.math.unsorted_segment_max(probabilities, rows, num_rows)
        return best / tf.reduce_sum(best, axis=1, keepdims=True)
    if how == "vote":
        # The first most probable class, as np.argmax, whatever the device's argmax does.
        votes = tf.one_hot(first_max(probabilities), tf.shape(logits)[1], dtype=tf.float32)
        counts = tf.math.unsorted_segment_sum(tf.ones_like(rows, tf.float32), rows, num_rows)
        # The mean probability, weighted by 1 / (2n) for n windows, breaks ties without
        # changing a majority (shares differ by at least 1 / n); the sum stays 1.
        weight = 1.0 / (2.0 * counts[:, None])
        shares = tf.math.unsorted_segment_mean(votes, rows, num_rows)
        mean = tf.math.unsorted_segment_mean(probabilities, rows, num_rows)
        return (shares + weight * mean) / (1.0 + weight)
    raise ValueError(f"Unknown window aggregation {how!r}.")
