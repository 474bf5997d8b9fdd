"""training/metrics.py against scikit-learn and scipy (used here only, never by the product)."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

from data.glue import metrics

# sklearn warns about one-class inputs, which the size-1 and degenerate cases are on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:A single label was found:UserWarning")


def _classes(seed, size, num_classes=2, agreement=0.7):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, size)
    noise = rng.integers(0, num_classes, size)
    predictions = np.where(rng.random(size) < agreement, labels, noise)
    return predictions, labels


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("size", [1, 7, 500])
def test_binary_metrics_match_sklearn(seed, size):
    predictions, labels = _classes(seed, size)
    assert metrics.accuracy(predictions, labels) == pytest.approx(
        skm.accuracy_score(labels, predictions), abs=1e-12
    )
    assert metrics.f1(predictions, labels) == pytest.approx(
        skm.f1_score(labels, predictions, pos_label=1, zero_division=0.0), abs=1e-12
    )
    assert metrics.matthews_corrcoef(predictions, labels) == pytest.approx(
        skm.matthews_corrcoef(labels, predictions), abs=1e-12
    )


@pytest.mark.parametrize("seed", range(3))
def test_multiclass_mcc_and_accuracy(seed):
    predictions, labels = _classes(seed, 300, num_classes=3, agreement=0.5)
    assert metrics.matthews_corrcoef(predictions, labels) == pytest.approx(
        skm.matthews_corrcoef(labels, predictions), abs=1e-12
    )
    assert metrics.accuracy(predictions, labels) == pytest.approx(
        skm.accuracy_score(labels, predictions)
    )


@pytest.mark.parametrize(
    "predictions,labels",
    [
        ([1, 1, 1, 1], [0, 1, 0, 1]),  # constant predictions: MCC undefined -> 0
        ([0, 0, 0], [0, 0, 0]),  # no positives at all: F1 0, MCC 0
        ([0, 0, 1], [1, 1, 0]),  # all wrong: MCC -1
        ([1, 0, 1], [1, 0, 1]),  # all right
    ],
)
def test_degenerate_binary_cases(predictions, labels):
    assert metrics.f1(predictions, labels) == pytest.approx(
        skm.f1_score(labels, predictions, zero_division=0.0)
    )
    assert metrics.matthews_corrcoef(predictions, labels) == pytest.approx(
        skm.matthews_corrcoef(labels, predictions)
    )


@pytest.mark.parametrize("seed", range(4))
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(seed)
    labels = rng.uniform(0, 5, 200)
    predictions = labels + rng.normal(0, 1.5, 200)
    assert metrics.pearson(predictions, labels) == pytest.approx(
        stats.pearsonr(predictions, labels)[0], abs=1e-12
    )
    assert metrics.spearman(predictions, labels) == pytest.approx(
        stats.spearmanr(predictions, labels)[0], abs=1e-12
    )


def test_spearman_ties_are_ranked_by_average():
    # STS-B scores come in steps of 0.2 and predictions get rounded: many ties on both sides.
    rng = np.random.default_rng(0)
    labels = np.round(rng.uniform(0, 5, 300) * 5) / 5
    predictions = np.round(labels + rng.normal(0, 1, 300))
    assert len(np.unique(predictions)) < 12
    expected = stats.spearmanr(predictions, labels)[0]
    assert metrics.spearman(predictions, labels) == pytest.approx(expected, abs=1e-12)
    # Ranking ties by order of appearance instead gives a different value.
    ordinal = stats.pearsonr(stats.rankdata(predictions, "ordinal"), labels)[0]
    assert abs(ordinal - expected) > 1e-3
    assert metrics.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(
        stats.spearmanr([1, 2, 2, 3], [1, 2, 3, 4])[0]
    )


def test_constant_input_has_no_correlation():
    assert math.isnan(metrics.pearson([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]))
    assert math.isnan(metrics.spearman([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]))


def test_glue_metrics_keys_and_values():
    predictions, labels = _classes(11, 100)
    cola = metrics.glue_metrics("CoLA", predictions, labels)
    assert set(cola) == {"eval_accuracy", "eval_mcc"}
    assert cola["eval_mcc"] == pytest.approx(skm.matthews_corrcoef(labels, predictions))
    for task in ("mrpc", "QQP"):
        result = metrics.glue_metrics(task, predictions, labels)
        assert set(result) == {"eval_accuracy", "eval_f1"}
        assert result["eval_f1"] == pytest.approx(skm.f1_score(labels, predictions))
    for task in ("sst-2", "mnli", "qnli", "rte", "wnli", "xnli", "ax"):
        result = metrics.glue_metrics(task, predictions, labels)
        assert result == {"eval_accuracy": pytest.approx(skm.accuracy_score(labels, predictions))}
    scores = np.linspace(0, 5, 50)
    stsb = metrics.glue_metrics("STS-B", scores[::-1] ** 2, scores)
    assert set(stsb) == {"eval_pearson", "eval_spearman"}
    assert stsb["eval_spearman"] == pytest.approx(-1.0)
    assert stsb["eval_pearson"] == pytest.approx(stats.pearsonr(scores[::-1] ** 2, scores)[0])
    assert all(isinstance(v, float) for v in (*cola.values(), *stsb.values()))


def test_bad_input():
    with pytest.raises(ValueError, match="No metrics for unknown task 'squad'"):
        metrics.glue_metrics("squad", [1], [1])
    with pytest.raises(ValueError, match="3 predictions for 2 labels"):
        metrics.accuracy([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="No predictions"):
        metrics.f1([], [])
