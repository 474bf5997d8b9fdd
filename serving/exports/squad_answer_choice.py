"""`data.squad.answer_choice` as TensorFlow ops, for the text-in SQuAD SavedModel
(`serving.exports.squad`): the same valid spans, the same best span, the same null score and
no-answer decision, over every window of a batch of questions at once.

Each `*_graph` function is the twin of the `data.squad.answer_choice` function without the
suffix (`best_span_graph`: the first of `ranked`; `final_text_graph`:
`data.squad.postprocess.get_final_text`); tests/serving/test_twin_parity.py runs both
on the same generated cases. A change to one twin is a change to both.

Shapes: K windows of B questions, S positions per window, n = min(n_best_size, S).
"""

import tensorflow as tf

from data.squad.answer_choice import NO_NULL_SCORE
from serving.exports.windows import first_max

# The code point of a space, which separates the words of an answer's text.
_SPACE = 32


def window_spans_graph(
    start_logits, end_logits, context_start, context_length, max_context, n_best_size,
    max_answer_length,
):  # fmt: skip
    """The graph twin of `data.squad.answer_choice.window_spans`, for every window at once.

    Args:
        start_logits, end_logits: float64 [K, S].
        context_start: int64 [K], each window's first context position (its question's
            length + 2).
        context_length: int64 [K], the context tokens of each window.
        max_context: bool [K, S], whether the window gives the token at that position its
            most context.
        n_best_size, max_answer_length: Python ints, as for the twin.

    Returns:
        (starts, ends, scores): int64 [K, n] the best start and end positions of each window,
        best first (ties: the lower position), and float64 [K, n, n] the start + end logit of
        each (start rank, end rank) pair that is a valid span, -inf where it is not.
    """
    width = start_logits.shape[1]
    n = (
        min(n_best_size, width)
        if width is not None
        else tf.minimum(n_best_size, tf.shape(start_logits)[1])
    )
    # top_k gives equal values in position order, as the twin's stable sort.
    starts = tf.cast(tf.math.top_k(start_logits, n).indices, tf.int64)
    ends = tf.cast(tf.math.top_k(end_logits, n).indices, tf.int64)
    s, e = starts[:, :, None], ends[:, None, :]
    first = context_start[:, None, None]
    last = first + context_length[:, None, None] - 1
    valid = (s >= first) & (s <= last) & (e >= first) & (e <= last)
    valid &= tf.gather(max_context, starts, batch_dims=1)[:, :, None]
    valid &= (e >= s) & (e - s + 1 <= max_answer_length)
    score = (
        tf.gather(start_logits, starts, batch_dims=1)[:, :, None]
        + tf.gather(end_logits, ends, batch_dims=1)[:, None, :]
    )
    return starts, ends, tf.where(valid, score, -float("inf"))


def best_span_graph(starts, ends, scores, windows_per_question):
    """The graph twin of the first of `data.squad.answer_choice.ranked`: each question's best
    valid span over its windows, the first of equal ones in the original's order (window,
    start rank, end rank).

    Args:
        starts, ends, scores: `window_spans_graph`'s, the windows question by question.
        windows_per_question: int64 [B], how many of the K windows are each question's.

    Returns:
        (window, start, end, score, has_span): int64 [B] the span's window (K without a
        span), int64 [B] its start and end positions (0 without), float64 [B] its start + end
        logit (-inf without) and bool [B] whether the question has a valid span.
    """
    n = tf.shape(starts, out_type=tf.int64)[1]
    per_question = tf.RaggedTensor.from_row_lengths(
        tf.reshape(scores, [-1]), windows_per_question * n * n
    ).to_tensor(default_value=-float("inf"))
    flat = first_max(per_question)
    score = tf.reduce_max(per_question, axis=1)
    has_span = score > -float("inf")
    num_windows = tf.shape(starts, out_type=tf.int64)[0]
    first_window = tf.cumsum(windows_per_question, exclusive=True)
    # Questions without a valid span point at one more (zero) row of each table.
    window = tf.where(has_span, first_window + flat // (n * n), num_windows)
    pad = tf.zeros([1, n], tf.int64)
    start = tf.gather_nd(tf.concat([starts, pad], 0), tf.stack([window, (flat // n) % n], 1))
    end = tf.gather_nd(tf.concat([ends, pad], 0), tf.stack([window, flat % n], 1))
    return window, start, end, score, has_span


def null_score_graph(start_logits, end_logits, windows_per_question):
    """The graph twin of `data.squad.answer_choice.null_score`: float64 [B], each question's
    lowest start + end logit at `[CLS]` over its windows (`NO_NULL_SCORE` where none is
    lower, as where a question has no window).

    Args:
        start_logits, end_logits: float64 [K, S], the windows question by question.
        windows_per_question: int64 [B].
    """
    null = tf.RaggedTensor.from_row_lengths(
        start_logits[:, 0] + end_logits[:, 0], windows_per_question
    )
    return tf.minimum(tf.reduce_min(null, axis=1), float(NO_NULL_SCORE))


def no_answer_graph(score_null, best_score, has_span, null_score_diff_threshold):
    """The graph twin of `data.squad.answer_choice.no_answer`: (bool [B], whether each question
    goes unanswered; float32 [B], the probability of no answer, the sigmoid of the null score
    minus the best span's).

    Args:
        score_null: float64 [B], `null_score_graph`'s.
        best_score: float64 [B], the best span's score (ignored where `has_span` is false: a
            question without a span counts 0.0).
        has_span: bool [B].
        null_score_diff_threshold: a float64 scalar (the SavedModel's variable) or a float.
    """
    diff = score_null - tf.where(has_span, best_score, 0.0)
    unanswered = tf.logical_or(diff > null_score_diff_threshold, ~has_span)
    return unanswered, tf.cast(tf.sigmoid(diff), tf.float32)


def final_text_graph(pred_text, orig_text, basic_tokens):
    """The graph twin of `data.squad.postprocess.get_final_text`, for one answer.

    `pred_text` is found in `orig_text` re-tokenized by the BasicTokenizer and mapped back
    through the non-space characters; on any mismatch the whole `orig_text`.

    Args:
        pred_text: string scalar, the detokenized WordPiece text of the span.
        orig_text: string scalar, the span's words joined by single spaces.
        basic_tokens: the in-graph BasicTokenizer (`FastFullTokenizer.basic_tokens`), with
            the model's casing.

    Returns:
        (text, begin, end): the answer, and its first and last code point in `orig_text`
        (int64 scalars).
    """
    orig = tf.strings.unicode_decode(orig_text, "UTF-8")
    tokens, _ = basic_tokens(tf.reshape(orig_text, [1]))
    spaces = tf.RaggedTensor.from_tensor(tf.fill([tokens.nrows(), 1], _SPACE))
    spaced = tf.concat([tokens, spaces], axis=1).flat_values[:-1]
    pred = tf.strings.unicode_decode(pred_text, "UTF-8")
    m, size = tf.size(pred, tf.int64), tf.size(spaced, tf.int64)
    window = tf.range(tf.maximum(size - m + 1, 0))[:, None] + tf.range(m)[None, :]
    matches = tf.reduce_all(tf.gather(spaced, window) == pred[None, :], axis=1)
    found = tf.logical_and(tf.reduce_any(matches), m > 0)
    positions = tf.range(tf.size(matches, tf.int64))
    start = tf.reduce_min(tf.where(matches, positions, tf.int64.max))
    end = start + m - 1
    orig_non_space = tf.where(orig != _SPACE)[:, 0]
    tok_non_space = spaced != _SPACE
    tok_to_non_space = tf.cumsum(tf.cast(tok_non_space, tf.int64)) - 1
    same_length = tf.size(orig_non_space, tf.int64) == tf.reduce_sum(
        tf.cast(tok_non_space, tf.int64)
    )

    def at(values, index):
        return tf.gather(values, tf.clip_by_value(index, 0, tf.size(values, tf.int64) - 1))

    ok = found & same_length & at(tok_non_space, start) & at(tok_non_space, end)
    begin = at(orig_non_space, at(tok_to_non_space, start))
    finish = at(orig_non_space, at(tok_to_non_space, end))
    begin = tf.where(ok, begin, 0)
    finish = tf.where(ok, finish, tf.size(orig, tf.int64) - 1)
    text = tf.strings.unicode_encode(orig[begin : finish + 1], "UTF-8")
    return text, begin, finish
