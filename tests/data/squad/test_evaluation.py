"""SQuAD scoring against tf-models-official's ports of the official evaluate-v1.1.py and
evaluate-v2.0.py, on real dev questions and predictions of every kind."""

import json
import os
import random

import pytest
from official.nlp.tools import squad_evaluate_v1_1, squad_evaluate_v2_0

from data.squad.evaluation import best_non_null_answers, evaluate_v1, evaluate_v2, questions
from tests.helpers.paths import TESTDATA


def _dev(version):
    with open(os.path.join(TESTDATA, "squad", f"dev-v{version}.json")) as f:
        return json.load(f)["data"]


def _predictions(dataset, rng, drop=0.0):
    """Gold answers, gold answers with punctuation/articles/case changed, partial overlaps,
    wrong words and no answer, mixed; `drop` leaves some questions without a prediction."""
    out = {}
    for qa in questions(dataset):
        if rng.random() < drop:
            continue
        gold = qa["answers"][0]["text"] if qa["answers"] else "nothing here"
        words = gold.split()
        out[qa["id"]] = rng.choice(
            [
                gold,
                f"The {gold.upper()}!",
                " ".join(words[: max(1, len(words) // 2)]),
                gold + " and more words",
                "completely unrelated",
                "",
            ]
        )
    return out


@pytest.mark.parametrize("seed", range(5))
def test_v1_equals_the_official_port(seed):
    dataset = _dev("1.1")
    predictions = _predictions(dataset, random.Random(seed), drop=0.1)
    ours = evaluate_v1(dataset, predictions)
    port = squad_evaluate_v1_1.evaluate(dataset, predictions)
    assert ours["exact_match"] == pytest.approx(100 * port["exact_match"], abs=1e-9)
    assert ours["f1"] == pytest.approx(100 * port["final_f1"], abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_v2_equals_the_official_port(seed):
    dataset = _dev("2.0")
    rng = random.Random(seed)
    predictions = _predictions(dataset, rng)
    # No-answer scores around the official 1.0 cut, with ties.
    null_odds = {
        qid: rng.choice([-3.0, -0.5, 0.0, 0.7, 1.0, 1.5, rng.gauss(0, 2)]) for qid in predictions
    }
    ours = evaluate_v2(dataset, predictions, null_odds)
    port = squad_evaluate_v2_0.evaluate(dataset, predictions, null_odds)
    renamed = {"best_exact": "final_exact", "best_f1": "final_f1"}
    for key in ("exact", "f1", "total", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1"):
        assert ours[key] == pytest.approx(port[key], abs=1e-9), key
    for ours_key, port_key in renamed.items():
        assert ours[ours_key] == pytest.approx(port[port_key], abs=1e-9)
        assert ours[ours_key + "_thresh"] == port[port_key + "_thresh"]


def test_best_non_null_answers():
    nbest = {
        "a": [{"text": ""}, {"text": "x"}, {"text": "y"}],
        "b": [{"text": "z"}],
        "c": [{"text": ""}],
    }
    assert best_non_null_answers(nbest) == {"a": "x", "b": "z", "c": ""}
