"""Which span answers a SQuAD question, as the original run_squad.py chooses it, and where the
answer sits in the context.

The runners apply these rules in Python (`data.squad.postprocess` builds the n-best lists and
prediction files on them; `serving.lite_io` answers a TFLite export's requests with them). The
text-in SavedModel applies the same rules as TensorFlow ops: their graph twins, named like
them with the suffix `_graph`, are in `serving/exports/squad_answer_choice.py`, and
tests/serving/test_twin_parity.py runs both on the same generated cases. A change to one twin
is a change to both.

Positions are a window's token positions (`[CLS] question [SEP] context [SEP]`); a window's
logits are float sequences [max_seq_length] (or its real length).
"""

import numpy as np

# The original starts its search for the lowest null score here (large and positive), so a
# question without any window keeps it.
NO_NULL_SCORE = 1000000


def best_indexes(logits, n_best_size):
    """Indexes of the `n_best_size` largest logits, largest first, ties in position order."""
    return sorted(range(len(logits)), key=logits.__getitem__, reverse=True)[:n_best_size]


def window_spans(start_logits, end_logits, context, max_context, n_best_size, max_answer_length):
    """The valid (start, end) pairs among one window's best start and end positions.

    Each of the `n_best_size` best starts is paired with each of the `n_best_size` best ends,
    in that order (the original's). Only the context's own tokens qualify, the start must be in
    the window that gives it the most context (so that one window only proposes a span), and
    the span must be 1..`max_answer_length` tokens long. Graph twin:
    `serving.exports.squad_answer_choice.window_spans_graph`.

    Args:
        start_logits, end_logits: float sequences [S], the window's logits.
        context: the positions that hold context tokens (a feature's `token_to_orig_map`).
        max_context: position -> whether this window gives that token its most context (a
            feature's `token_is_max_context`).
        n_best_size: best starts and best ends paired.
        max_answer_length: the longest span, in tokens.

    Returns:
        list of (start, end) positions.
    """
    spans = []
    for start in best_indexes(start_logits, n_best_size):
        for end in best_indexes(end_logits, n_best_size):
            # A position past the window's tokens is in no map (the original also compares
            # it with len(tokens) first: the same answer).
            if start not in context or end not in context:
                continue
            if not max_context.get(start, False):
                continue
            if end < start or end - start + 1 > max_answer_length:
                continue
            spans.append((start, end))
    return spans


def ranked(candidates):
    """`candidates` best first by start + end logit; equal scores keep their order (the
    original's stable sort), so the first best wins. Graph twin (the first of the ranking):
    `serving.exports.squad_answer_choice.best_span_graph`.

    Args:
        candidates: objects with `start_logit` and `end_logit`, in the original's order:
            window by window, then as `window_spans` yields them.

    Returns:
        A new list.
    """
    return sorted(candidates, key=lambda c: c.start_logit + c.end_logit, reverse=True)


def null_score(windows):
    """SQuAD 2.0's null score of one question: the lowest start + end logit at `[CLS]` over its
    windows. Graph twin: `serving.exports.squad_answer_choice.null_score_graph`.

    Args:
        windows: (start_logits, end_logits) per window, each a float sequence [S].

    Returns:
        (score, the index of the first window that has it); (`NO_NULL_SCORE`, None) without
        any window scoring below it.
    """
    score, window = NO_NULL_SCORE, None
    for index, (start_logits, end_logits) in enumerate(windows):
        if start_logits[0] + end_logits[0] < score:
            score, window = start_logits[0] + end_logits[0], index
    return score, window


def no_answer(score_null, best_score, null_score_diff_threshold):
    """SQuAD 2.0: whether the question goes unanswered, and the probability of no answer.

    The null score minus the best span's (0.0 without a span) is null_odds.json's value; above
    the threshold the answer is "". The probability is its sigmoid: the two-way softmax of the
    null score against the best span's. Graph twin:
    `serving.exports.squad_answer_choice.no_answer_graph`.

    Args:
        score_null: `null_score`'s score.
        best_score: the best span's start + end logit; None without a valid span.
        null_score_diff_threshold: the run's threshold (run_squad.py's flag).

    Returns:
        (no answer: bool, the probability of no answer: float).
    """
    diff = score_null - (0.0 if best_score is None else best_score)
    probability = float(1.0 / (1.0 + np.exp(-diff)))
    return best_score is None or diff > null_score_diff_threshold, probability


def word_starts(char_to_word):
    """The first character of each word in the context, from `split_context`'s map of each
    character to its word (-1 for whitespace)."""
    return [
        c for c, w in enumerate(char_to_word) if w >= 0 and (c == 0 or char_to_word[c - 1] != w)
    ]


def answer_characters(starts, doc_tokens, words, answer):
    """(first character, one past the last) of `answer` in the context; (-1, -1) without one.

    The answer is text of the span's words joined by single spaces (`get_final_text`'s
    `orig_text`), so its offset there maps through each word's first character in the context.
    The SavedModel's counterpart is the end of `SquadExport._span_text`
    (serving/exports/squad.py).

    Args:
        starts: `word_starts` of the context.
        doc_tokens: the context's words (`SquadExample.doc_tokens`).
        words: (first, last) word of the answer's span; None without a span.
        answer: the answer text.
    """
    if not answer or words is None:
        return -1, -1
    first, last = words
    span = doc_tokens[first : last + 1]
    at = " ".join(span).find(answer)
    if at < 0:
        return -1, -1
    joined_starts = np.cumsum([0] + [len(w) + 1 for w in span[:-1]])

    def to_context(offset):
        k = int(np.searchsorted(joined_starts, offset, side="right")) - 1
        return starts[first + k] + offset - int(joined_starts[k])

    return to_context(at), to_context(at + len(answer) - 1) + 1
