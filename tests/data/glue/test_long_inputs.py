"""data.glue.long_inputs: head and tail against hand-made cases, windows against run_squad's
windows and the original truncation, aggregation against direct computations."""

import itertools
import os
import random

import numpy as np
import pytest

from data.glue.features import convert_examples_to_features
from data.glue.long_inputs import (
    aggregate_windows,
    convert_long_examples,
    head_and_tail,
    truncated_lengths,
)
from data.glue.processor_base import InputExample, PaddingInputExample
from data.squad.examples import SquadExample
from data.squad.features import convert_examples_to_features as squad_features
from data.tokenization.full_tokenizer import FullTokenizer
from data.tokenization.packing import truncate_seq_pair
from fileio.errors import UserError
from tests.helpers.paths import TESTDATA

VOCAB = os.path.join(TESTDATA, "glue", "vocab.txt")
WORDS = "the cat sat on a mat yesterday went to park and walked home".split()


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(VOCAB, True)


def _text(rng, length):
    return " ".join(rng.choice(WORDS) for _ in range(length))


def _convert(examples, tokenizer, mode, max_seq_length=16, **options):
    return convert_long_examples(
        examples, ["0", "1"], max_seq_length, tokenizer, False, mode, **options
    )


@pytest.mark.parametrize(
    "length, keep, head, expected",
    [
        (10, 6, 2, [0, 1, 6, 7, 8, 9]),  # the first 2, then the last 4
        (10, 6, None, [0, 5, 6, 7, 8, 9]),  # a quarter of 6: 1 head piece
        (10, 6, 0, [4, 5, 6, 7, 8, 9]),  # tail only
        (10, 6, 9, [0, 1, 2, 3, 4, 5]),  # head only: the original's truncation
        (5, 6, 2, [0, 1, 2, 3, 4]),  # fits: all kept
        (510 + 100, 510, None, list(range(127)) + list(range(610 - 383, 610))),  # Sun et al.
    ],
)
def test_head_and_tail_hand_made(length, keep, head, expected):
    assert head_and_tail(list(range(length)), keep, head) == expected


def test_truncated_lengths_are_the_original_truncation():
    for len_a, len_b, budget in itertools.product(range(12), range(12), range(14)):
        a, b = list(range(len_a)), list(range(len_b))
        truncate_seq_pair(a, b, budget)  # the original's pop loop
        assert truncated_lengths(len_a, len_b, budget) == (len(a), len(b))


def test_head_tail_record_of_a_pair(tokenizer):
    """A: 10 pieces, B: 3, 12 positions: the original keeps 6 of A and all of B; head_tail
    keeps A's first 2 and last 4 instead of its first 6."""
    a = "the cat sat on a mat yesterday went to park"
    example = InputExample("x-0", a, "walked home .", "1")
    (feature,), owners = _convert([example], tokenizer, "head_tail", 12, head_tokens=2)
    ids = tokenizer.convert_tokens_to_ids
    words, b = tokenizer.tokenize(a), tokenizer.tokenize("walked home .")
    assert len(words) == 10 and len(b) == 3
    expected = ["[CLS]", *words[:2], *words[6:], "[SEP]", *b, "[SEP]"]
    assert feature.input_ids == ids(expected) + [0] * (12 - len(expected))
    assert feature.segment_ids == [0] * 8 + [1] * 4
    assert owners == [0]


@pytest.mark.parametrize("mode", ["head_tail", "windows"])
def test_inputs_that_fit_give_the_original_records(tokenizer, mode):
    """An example that fits one window: exactly the truncate mode's (the original's) record,
    for single texts, pairs, empty texts and padding examples."""
    rng = random.Random(3)
    examples = [
        InputExample(f"t-{i}", _text(rng, rng.randint(0, 13)), b, str(i % 2))
        for i, b in enumerate([None, "", "the cat", None, "walked home"] * 4)
    ]
    fitting = [e for e in examples if len(tokenizer.tokenize(f"{e.text_a} {e.text_b}")) <= 13]
    fitting.append(PaddingInputExample())
    original = convert_examples_to_features(fitting, ["0", "1"], 16, tokenizer)
    features, owners = _convert(fitting, tokenizer, mode)
    assert owners == list(range(len(fitting)))
    assert [vars(f) for f in features] == [vars(f) for f in original]


def test_single_text_windows_cover_every_piece(tokenizer):
    """40 pieces, 14-piece windows 7 apart: windows at 0, 7, 14, 21 and 28 (the last one ends
    at piece 39), each [CLS] window [SEP], all with the example's label."""
    text = _text(random.Random(0), 40)
    pieces = tokenizer.tokenize(text)
    features, owners = _convert([InputExample("t-0", text, None, "1")], tokenizer, "windows")
    assert owners == [0] * 5
    for feature, start in zip(features, [0, 7, 14, 21, 28], strict=True):
        expected = tokenizer.convert_tokens_to_ids(["[CLS]", *pieces[start : start + 14], "[SEP]"])
        assert feature.input_ids == expected + [0] * (16 - len(expected))
        assert feature.label_id == 1 and feature.is_real_example


@pytest.mark.parametrize("stride", [None, 3, 20])
def test_pair_windows_are_run_squads_windows(tokenizer, stride):
    """A pair whose text_b needs windows: text_a in each, like run_squad's question, and the
    windows of text_b as run_squad cuts a context (its records are the original's: tested in
    tests/data/squad)."""
    rng = random.Random(1)
    question, context = _text(rng, 5), _text(rng, 47)
    example = InputExample("p-0", question, context, "0")
    features, _ = _convert([example], tokenizer, "windows", 24, doc_stride=stride)
    room = 24 - 5 - 3
    squad = SquadExample("q", question, context.split(), "", -1, -1, False)
    reference = squad_features([squad], tokenizer, 24, stride or room // 2, 8, False)
    assert len(features) == len(reference) > 2
    for ours, theirs in zip(features, reference, strict=True):
        assert ours.input_ids == theirs.input_ids
        assert ours.input_mask == theirs.input_mask
        assert ours.segment_ids == theirs.segment_ids


def test_windows_need_room(tokenizer):
    example = InputExample("p-0", "the cat", "sat on the mat", "0")
    with pytest.raises(UserError, match=r"--long_inputs=windows at --max_seq_length=4 leaves"):
        _convert([example], tokenizer, "windows", 4)


def _softmax(row):
    e = [np.exp(v - max(row)) for v in row]
    return [v / sum(e) for v in e]


def test_aggregations_against_direct_computations():
    """Each example's prediction computed here window by window with Python loops."""
    rng = np.random.default_rng(0)
    owners = [0, 0, 0, 1, 2, 2]
    logits = rng.normal(size=(6, 3)) * 2
    logits[3] = [0.0, 1.0, 0.0]
    windows = {e: [logits[i] for i, o in enumerate(owners) if o == e] for e in range(3)}
    probs = {e: [_softmax(list(w)) for w in ws] for e, ws in windows.items()}
    for e in range(3):
        mean = [sum(p[c] for p in probs[e]) / len(probs[e]) for c in range(3)]
        got = aggregate_windows(logits, owners, 3, "mean")
        np.testing.assert_allclose(got[e], mean, rtol=1e-6)
        peak = [max(p[c] for p in probs[e]) for c in range(3)]
        got = aggregate_windows(logits, owners, 3, "max")
        np.testing.assert_allclose(got[e], [v / sum(peak) for v in peak], rtol=1e-6)
        mean_logits = [sum(w[c] for w in windows[e]) / len(windows[e]) for c in range(3)]
        got = aggregate_windows(logits, owners, 3, "mean_logits")
        np.testing.assert_allclose(got[e], _softmax(mean_logits), rtol=1e-6)
        votes = [sum(int(np.argmax(p)) == c for p in probs[e]) for c in range(3)]
        got = aggregate_windows(logits, owners, 3, "vote")
        assert abs(got[e].sum() - 1) < 1e-6
        winners = [c for c in range(3) if votes[c] == max(votes)]
        assert int(np.argmax(got[e])) == max(winners, key=lambda c: mean[c])


def test_a_tied_vote_goes_to_the_higher_mean_probability():
    # Two windows, one vote each: class 1's window is the more confident.
    logits = np.array([[1.0, 0.0], [0.0, 3.0]])
    shares = aggregate_windows(logits, [0, 0], 1, "vote")[0]
    assert np.argmax(shares) == 1 and shares[0] == pytest.approx(0.5, abs=0.1)


def test_regression_aggregates_the_scores():
    scores = np.array([[1.0], [2.0], [4.0], [0.5]])
    np.testing.assert_allclose(
        aggregate_windows(scores, [0, 0, 0, 1], 2, "mean", True), [7 / 3, 0.5], rtol=1e-6
    )
    np.testing.assert_allclose(aggregate_windows(scores, [0, 0, 0, 1], 2, "max", True), [4, 0.5])
