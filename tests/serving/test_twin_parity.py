"""Each rule that exists twice, as Python for the runners (`data/`) and as TensorFlow ops for the
exports (the `*_graph` twins), run both ways on the same generated cases.

The cases are random (seeded) lengths, budgets, strides and logits, a few hundred per rule, all
of a rule's cases in one batch where the graph twin takes one; any difference fails.
"""

import numpy as np
import pytest
import tensorflow as tf

from data.classification.thresholds import apply_thresholds
from data.glue.long_inputs import WINDOW_AGGREGATIONS, aggregate_windows, head_and_tail, pair_room
from data.squad.answer_choice import NO_NULL_SCORE, no_answer, null_score, ranked, window_spans
from data.squad.postprocess import get_final_text
from data.tokenization.fast_tokenizer import FastFullTokenizer
from data.tokenization.full_tokenizer import BasicTokenizer
from data.tokenization.packing import truncated_lengths
from data.tokenization.preprocessor import truncated_lengths_graph
from data.windows import half_window_stride, max_context_windows, sliding_windows
from serving.exports.classifier import apply_thresholds_graph
from serving.exports.long_inputs import (
    aggregate_windows_graph,
    head_and_tail_graph,
    pair_room_graph,
)
from serving.exports.squad_answer_choice import (
    best_span_graph,
    final_text_graph,
    no_answer_graph,
    null_score_graph,
    window_spans_graph,
)
from serving.exports.windows import (
    half_window_stride_graph,
    max_context_windows_graph,
    sliding_windows_graph,
)

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


def test_half_window_stride_twins_agree():
    # Windows of 0 and 1 piece included (a stride is at least 1).
    windows = list(range(0, 12)) + np.random.default_rng(5).integers(12, 600, NUM_CASES).tolist()
    graph = half_window_stride_graph(_int64(windows)).numpy().tolist()
    assert graph == [half_window_stride(window) for window in windows]


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


class _Span:
    """A candidate of `ranked`: its window and positions, and its logits."""

    def __init__(self, window, start, end, start_logit, end_logit):
        self.key = (window, start, end)
        self.start_logit, self.end_logit = start_logit, end_logit


def _squad_cases(salt):
    """Batches of SQuAD questions as the model sees them: each question's windows (random
    context and question lengths, window room and stride), random float32 logits per window
    (every other batch drawn from a few values, so that equal scores test the first-best
    rule), n_best_size, max_answer_length and the null threshold."""
    rng = _rng(salt)
    for batch in range(40):
        seq = int(rng.integers(6, 30))
        questions = []
        for _ in range(int(rng.integers(1, 7))):
            query = int(rng.integers(0, seq - 3))
            room = seq - query - 3
            doc = int(rng.integers(0, 50))
            spans = sliding_windows(doc, room, int(rng.integers(1, room + 4)))
            questions.append((query, spans, max_context_windows(spans, doc)))
        num_windows = sum(len(spans) for _, spans, _ in questions)
        if batch % 2:
            logits = rng.integers(-2, 3, (2, num_windows, seq)).astype(np.float32)
        else:
            logits = rng.normal(0.0, 3.0, (2, num_windows, seq)).astype(np.float32)
        n_best_size = int(rng.integers(1, seq + 3))
        max_answer_length = int(rng.integers(1, 12))
        threshold = float(rng.normal(0.0, 2.0))
        yield questions, logits, n_best_size, max_answer_length, threshold


def _python_choice(questions, logits, n_best_size, max_answer_length, threshold):
    """Per question: (every window's valid spans, the best span or None, the null score, the
    no-answer decision and probability) by data.squad.answer_choice."""
    start_logits, end_logits = ([[float(x) for x in row] for row in side] for side in logits)
    choices, k = [], 0
    for query, spans, best in questions:
        windows, candidates, own = [], [], []
        for index, (start, length) in enumerate(spans):
            context = range(query + 2, query + 2 + length)
            max_context = {query + 2 + i: best[start + i] == index for i in range(length)}
            valid = window_spans(
                start_logits[k], end_logits[k], context, max_context, n_best_size,
                max_answer_length,
            )  # fmt: skip
            windows.append(valid)
            candidates += [_Span(k, s, e, start_logits[k][s], end_logits[k][e]) for s, e in valid]
            own.append((start_logits[k], end_logits[k]))
            k += 1
        top = ranked(candidates)[0] if candidates else None
        best_score = None if top is None else top.start_logit + top.end_logit
        score_null, _ = null_score(own)
        unanswered, probability = no_answer(score_null, best_score, threshold)
        choices.append(
            (
                windows,
                None if top is None else (*top.key, best_score),
                score_null,
                unanswered,
                np.float32(probability),
            )
        )
    return choices


def _graph_choice(questions, logits, n_best_size, max_answer_length, threshold):
    """The same by the graph twins (serving.exports.squad_answer_choice), all questions of the
    batch at once."""
    context_start, context_length, max_context = [], [], []
    seq = logits.shape[2]
    for query, spans, best in questions:
        for index, (start, length) in enumerate(spans):
            context_start.append(query + 2)
            context_length.append(length)
            row = [False] * seq
            for i in range(length):
                row[query + 2 + i] = best[start + i] == index
            max_context.append(row)
    start_logits, end_logits = (tf.constant(side, tf.float64) for side in logits)
    per_question = _int64([len(spans) for _, spans, _ in questions])
    starts, ends, scores = window_spans_graph(
        start_logits,
        end_logits,
        _int64(context_start),
        _int64(context_length),
        tf.constant(np.asarray(max_context, bool).reshape([-1, seq])),
        n_best_size,
        max_answer_length,
    )
    window, start, end, score, has_span = best_span_graph(starts, ends, scores, per_question)
    score_null = null_score_graph(start_logits, end_logits, per_question)
    unanswered, probability = no_answer_graph(score_null, score, has_span, threshold)
    valid = scores.numpy() > -np.inf
    starts, ends = starts.numpy().tolist(), ends.numpy().tolist()
    spans_of = [
        [(starts[k][i], ends[k][j]) for i, j in zip(*np.nonzero(valid[k]), strict=True)]
        for k in range(len(valid))
    ]
    choices, k = [], 0
    for b, (_, spans, _) in enumerate(questions):
        best = None
        if has_span[b]:
            best = (int(window[b]), int(start[b]), int(end[b]), float(score[b]))
        choices.append(
            (
                spans_of[k : k + len(spans)],
                best,
                float(score_null[b]),
                bool(unanswered[b]),
                probability.numpy()[b],
            )
        )
        k += len(spans)
    return choices


@pytest.mark.parametrize("version_2_with_negative", [False, True], ids=["v1.1", "v2.0"])
def test_squad_answer_choice_twins_agree(version_2_with_negative):
    """The valid spans of every window, each question's best span (the first of equal ones)
    and, SQuAD 2.0, its null score, no-answer decision and probability (float32, as the
    SavedModel returns it)."""
    compared = 0
    for case in _squad_cases(7 + version_2_with_negative):
        python = _python_choice(*case)
        graph = _graph_choice(*case)
        for p, g in zip(python, graph, strict=True):
            assert g[:2] == p[:2]
            if version_2_with_negative:
                assert g[2:] == p[2:]
            compared += 1
    # Enough of each kind: spans found and missing, answered and not.
    assert compared > 100


def test_a_question_without_windows_has_the_original_s_null_score():
    logits = np.zeros([2, 0, 8], np.float32)
    python = _python_choice([(1, [], [])], logits, 3, 4, 0.0)
    graph = _graph_choice([(1, [], [])], logits, 3, 4, 0.0)
    assert python == graph == [([], None, NO_NULL_SCORE, True, np.float32(1.0))]


# Words as contexts hold them: case, accents, punctuation inside and around words, CJK, a
# control character (dropped by the tokenizer: the fallback to the whole text).
_WORDS = (
    "Steve", "Smith's", "café", "(1990)", "U.S.", "naïve", "don't", "x-ray", "中文", "e.g.,",
    "ÉCOLE", "the", "river", "50%", "Zoë", "a\x07b", "über-cool", "“quoted”", "1,000.5",
)  # fmt: skip


def _final_text_cases(rng, do_lower_case):
    """(pred_text, orig_text) pairs: a span of orig_text's basic tokens (mostly), a text that
    is not in it, or an [UNK]."""
    basic = BasicTokenizer(do_lower_case=do_lower_case)
    cases = []
    for _ in range(NUM_CASES):
        orig_text = " ".join(rng.choice(_WORDS, rng.integers(1, 5)))
        tokens = basic.tokenize(orig_text)
        kind = rng.random()
        if kind < 0.8 and tokens:
            first = int(rng.integers(0, len(tokens)))
            last = int(rng.integers(first, len(tokens)))
            pred_text = " ".join(tokens[first : last + 1])
        elif kind < 0.9:
            pred_text = "[UNK]"
        else:
            pred_text = " ".join(basic.tokenize(str(rng.choice(_WORDS))))
        cases.append((pred_text, orig_text))
    return cases


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_final_text_twins_agree(tmp_path, do_lower_case):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n", encoding="utf-8")
    basic_tokens = FastFullTokenizer(str(vocab), do_lower_case=do_lower_case).basic_tokens
    cases = _final_text_cases(np.random.default_rng(11), do_lower_case)
    graph = tf.function(lambda pred, orig: final_text_graph(pred, orig, basic_tokens))
    for pred_text, orig_text in cases:
        text, begin, end = graph(tf.constant(pred_text), tf.constant(orig_text))
        python = get_final_text(pred_text, orig_text, do_lower_case)
        assert text.numpy().decode("utf-8") == python, (pred_text, orig_text)
        assert orig_text[int(begin) : int(end) + 1] == python


def test_multi_label_decision_twins_agree():
    rng = np.random.default_rng(13)
    probabilities = rng.random((NUM_CASES, 6)).astype(np.float32)
    # Thresholds on a probability (a tie: chosen), and halfway between two neighbouring float32
    # values (a float64 number that rounds onto one of them in float32).
    on = probabilities[rng.integers(0, NUM_CASES, 3), [0, 1, 2]].astype(np.float64)
    below = probabilities[rng.integers(0, NUM_CASES, 3), [3, 4, 5]]
    between = (below.astype(np.float64) + np.nextafter(below, np.float32(2)).astype(np.float64)) / 2
    thresholds = np.concatenate([on, between])
    graph = apply_thresholds_graph(tf.constant(probabilities), tf.constant(thresholds)).numpy()
    python = apply_thresholds(probabilities, thresholds)
    np.testing.assert_array_equal(graph.astype(np.int64), python)
    assert python[:, :3].sum() >= 3  # the ties are chosen
