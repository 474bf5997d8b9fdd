"""The official dev metric of each task names a key its runner writes in eval_results.txt, and
its range is the one the metric's own code reaches with right and wrong predictions."""

import numpy as np
import pytest

from data.dev_metrics import metric_range, official_metric
from data.glue.metrics import glue_metrics
from data.glue.processors import PROCESSORS
from data.ner.metrics import entity_scores
from data.squad.evaluation import evaluate_v1


@pytest.mark.parametrize("task", sorted(PROCESSORS))
def test_classifier_metric_is_one_the_task_reports(task):
    labels = np.array([0, 1, 1, 0], np.float32 if task == "stsb" else np.int64)
    key = official_metric("classifier", task)
    assert key in glue_metrics(task, labels, labels)
    # The official metric, not accuracy, where GLUE names another one.
    expected = {"cola": "eval_mcc", "mrpc": "eval_f1", "qqp": "eval_f1", "stsb": "eval_spearman"}
    assert key == expected.get(task, "eval_accuracy")


def test_squad_and_ner_metrics():
    dataset = [
        {"paragraphs": [{"context": "a b", "qas": [{"id": "q", "answers": [{"text": "b"}]}]}]}
    ]
    assert official_metric("squad") in evaluate_v1(dataset, {"q": "b"})
    # run_ner writes conlleval's entity scores under eval_ (jobs/ner_run.py).
    scores = entity_scores([["B-PER", "O"]], [["B-PER", "O"]])
    assert official_metric("ner") in {f"eval_{k}" for k in scores}
    assert official_metric("ner").endswith("_f1")


def test_unknown_runner_or_task():
    with pytest.raises(ValueError, match="pretraining"):
        official_metric("pretraining")
    with pytest.raises(ValueError, match="'nope'"):
        official_metric("classifier", "nope")


@pytest.mark.parametrize("task", sorted(PROCESSORS))
def test_classifier_metric_range_is_what_right_and_wrong_predictions_score(task):
    low, high = metric_range(official_metric("classifier", task))
    if task == "stsb":
        labels = np.array([0.0, 1.0, 2.5, 5.0], np.float32)
        wrong = labels[::-1].copy()  # the order reversed: a Spearman correlation of -1
    else:
        labels = np.array([0, 1, 1, 0])
        wrong = 1 - labels  # every prediction wrong: an MCC of -1, an accuracy and F1 of 0
    key = official_metric("classifier", task)
    assert glue_metrics(task, labels, labels)[key] == pytest.approx(high)
    assert glue_metrics(task, wrong, labels)[key] == pytest.approx(low)


def test_squad_and_ner_metric_ranges_are_what_right_and_wrong_predictions_score():
    dataset = [
        {"paragraphs": [{"context": "a b", "qas": [{"id": "q", "answers": [{"text": "b"}]}]}]}
    ]
    low, high = metric_range(official_metric("squad"))
    assert (low, high) == (0.0, 100.0)  # the official script's percent
    assert evaluate_v1(dataset, {"q": "b"})["f1"] == high
    assert evaluate_v1(dataset, {"q": "a"})["f1"] == low
    low, high = metric_range(official_metric("ner"))
    key = official_metric("ner").removeprefix("eval_")
    assert entity_scores([["B-PER", "O"]], [["B-PER", "O"]])[key] == high
    assert entity_scores([["B-PER", "O"]], [["O", "B-LOC"]])[key] == low
    assert metric_range("eval_loss") is None  # not an official metric: no range
