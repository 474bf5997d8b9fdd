"""Entity scores against two scorers written elsewhere: conlleval.pl itself (the CoNLL shared
task's script, run with perl) and seqeval in its default, conlleval-compatible mode."""

import os
import random
import subprocess

import pytest
from seqeval.metrics import accuracy_score, f1_score, precision_score, recall_score

from data.ner.conll import read_conll, split_tag
from data.ner.metrics import entity_scores
from tests.helpers.paths import REPO, TESTDATA

CONLLEVAL = os.path.join(REPO, "tests", "oracles", "conlleval.pl")
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]


def _to_iob1(tags):
    """IOB2 -> IOB1 (raw CoNLL-2003): B- only right after an entity of the same type."""
    out = []
    previous_type = None
    for tag in tags:
        prefix, chunk_type = split_tag(tag)
        if prefix == "B" and previous_type != chunk_type:
            tag = "I-" + chunk_type
        out.append(tag)
        previous_type = chunk_type if prefix != "O" else None
    return out


def _gold(iob1):
    sentences = read_conll(os.path.join(TESTDATA, "conll2003", "dev.txt"), "required").sentences
    gold = [[w.tag for w in s.words] for s in sentences]
    return [_to_iob1(tags) for tags in gold] if iob1 else gold


def _noisy(gold, seed, rate):
    """Predictions with random tags at `rate`: many ill-formed (I-X after O, type switches)."""
    rng = random.Random(seed)
    return [[rng.choice(TAGS) if rng.random() < rate else t for t in tags] for tags in gold]


def _conlleval(gold, predicted, tmp_path):
    """conlleval.pl's overall and per-type figures (percent, two decimals) on the same tags."""
    path = tmp_path / "scored.txt"
    with open(path, "w") as f:
        for gold_tags, predicted_tags in zip(gold, predicted, strict=True):
            for index, (g, p) in enumerate(zip(gold_tags, predicted_tags, strict=True)):
                f.write(f"w{index} {g} {p}\n")
            f.write("\n")
    with open(path) as f:
        out = subprocess.run(["perl", CONLLEVAL], stdin=f, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    overall = dict(
        (key.strip(), float(value.strip(" %")))
        for key, value in (part.split(":") for part in lines[1].split(";"))
    )
    per_type = {}
    for line in lines[2:]:
        name, rest = line.split(":", 1)
        per_type[name.strip()] = float(rest.split("FB1:")[1].split()[0])
    return overall, per_type


@pytest.mark.parametrize("iob1", [False, True])
@pytest.mark.parametrize("rate", [0.0, 0.05, 0.3])
def test_scores_equal_conlleval_pl(tmp_path, iob1, rate):
    gold = _gold(iob1)
    predicted = _noisy([tags for tags in _gold(False)], seed=int(rate * 100), rate=rate)
    overall, per_type = _conlleval(gold, predicted, tmp_path)
    ours = entity_scores(gold, predicted)
    # conlleval prints percent with two decimals.
    assert ours["precision"] * 100 == pytest.approx(overall["precision"], abs=0.005)
    assert ours["recall"] * 100 == pytest.approx(overall["recall"], abs=0.005)
    assert ours["f1"] * 100 == pytest.approx(overall["FB1"], abs=0.005)
    assert ours["accuracy"] * 100 == pytest.approx(overall["accuracy"], abs=0.005)
    assert {k[3:] for k in ours if k.startswith("f1_")} == set(per_type)
    for name, fb1 in per_type.items():
        assert ours[f"f1_{name}"] * 100 == pytest.approx(fb1, abs=0.005)
    if rate == 0.0 and not iob1:
        assert ours["f1"] == 1.0


@pytest.mark.parametrize("iob1", [False, True])
def test_scores_equal_seqeval_default_mode(iob1):
    gold = _gold(iob1)
    predicted = _noisy(_gold(False), seed=7, rate=0.2)
    ours = entity_scores(gold, predicted)
    assert ours["precision"] == pytest.approx(precision_score(gold, predicted), abs=1e-12)
    assert ours["recall"] == pytest.approx(recall_score(gold, predicted), abs=1e-12)
    assert ours["f1"] == pytest.approx(f1_score(gold, predicted), abs=1e-12)
    assert ours["accuracy"] == pytest.approx(accuracy_score(gold, predicted), abs=1e-12)


@pytest.mark.parametrize(
    "gold,predicted,expected",
    [
        # An I- after O opens a chunk (conlleval), which here matches the gold entity.
        (["B-PER", "I-PER", "O"], ["I-PER", "I-PER", "O"], (1, 1, 1)),
        # A type switch inside an entity splits it: two predicted chunks, none correct.
        (["B-ORG", "I-ORG"], ["B-ORG", "I-LOC"], (0, 2, 1)),
        # IOB1 gold: B- between two adjacent entities of one type.
        (["I-PER", "B-PER", "O"], ["B-PER", "B-PER", "O"], (2, 2, 2)),
        # No entity predicted: precision and F1 are 0, not an error.
        (["B-LOC"], ["O"], (0, 0, 1)),
    ],
)
def test_chunk_rules(gold, predicted, expected):
    correct, found, gold_count = expected
    scores = entity_scores([gold], [predicted])
    precision = correct / found if found else 0.0
    recall = correct / gold_count
    assert scores["precision"] == pytest.approx(precision)
    assert scores["recall"] == pytest.approx(recall)
    assert scores["f1"] == pytest.approx(f1_score([gold], [predicted]))


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError, match="2 predicted tags for 3 words"):
        entity_scores([["O", "O", "O"]], [["O", "O"]])
