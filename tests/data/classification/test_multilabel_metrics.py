"""data/classification/multilabel_metrics.py against scikit-learn (used here only)."""

import numpy as np
import pytest
from sklearn import metrics as skm

from data.classification.multilabel_metrics import multilabel_scores

# Labels without true or predicted positives are part of the cases on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")


def _multi_hot(seed, rows, cols, rate=0.3, agreement=0.7):
    rng = np.random.default_rng(seed)
    targets = (rng.random((rows, cols)) < rate).astype(np.int64)
    noise = (rng.random((rows, cols)) < rate).astype(np.int64)
    predicted = np.where(rng.random((rows, cols)) < agreement, targets, noise)
    return predicted, targets


def _labels(count):
    return [f"label_{c}" for c in range(count)]


def _check_against_sklearn(predicted, targets):
    labels = _labels(targets.shape[1])
    scores = multilabel_scores(predicted, targets, labels)
    for average in ("micro", "macro"):
        p, r, f, _ = skm.precision_recall_fscore_support(
            targets, predicted, average=average, zero_division=0
        )
        assert scores[f"{average}_precision"] == pytest.approx(p, abs=1e-12)
        assert scores[f"{average}_recall"] == pytest.approx(r, abs=1e-12)
        assert scores[f"{average}_f1"] == pytest.approx(f, abs=1e-12)
    p, r, f, s = skm.precision_recall_fscore_support(
        targets, predicted, average=None, zero_division=0
    )
    assert [row["label"] for row in scores["per_label"]] == labels
    np.testing.assert_allclose([row["precision"] for row in scores["per_label"]], p, atol=1e-12)
    np.testing.assert_allclose([row["recall"] for row in scores["per_label"]], r, atol=1e-12)
    np.testing.assert_allclose([row["f1"] for row in scores["per_label"]], f, atol=1e-12)
    assert [row["support"] for row in scores["per_label"]] == s.tolist()
    assert scores["subset_accuracy"] == pytest.approx(skm.accuracy_score(targets, predicted))
    assert all(isinstance(scores[k], float) for k in scores if k != "per_label")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", [(1, 2), (1, 5), (9, 3), (200, 7)])
def test_scores_match_sklearn(seed, shape):
    _check_against_sklearn(*_multi_hot(seed, *shape))


@pytest.mark.parametrize("seed", range(4))
def test_one_label_is_binary_scores_of_class_1(seed):
    # scikit-learn reads an [N, 1] matrix as binary labels, not a multi-label matrix.
    predicted, targets = _multi_hot(seed, 40, 1)
    scores = multilabel_scores(predicted, targets, ["only"])
    p, r, f, _ = skm.precision_recall_fscore_support(
        targets[:, 0], predicted[:, 0], average="binary", zero_division=0
    )
    for average in ("micro", "macro"):
        assert scores[f"{average}_precision"] == pytest.approx(p, abs=1e-12)
        assert scores[f"{average}_recall"] == pytest.approx(r, abs=1e-12)
        assert scores[f"{average}_f1"] == pytest.approx(f, abs=1e-12)
    assert scores["subset_accuracy"] == pytest.approx(skm.accuracy_score(targets, predicted))


@pytest.mark.parametrize("rate", [0.02, 0.5, 0.95])
def test_scores_match_sklearn_on_sparse_and_dense_labels(rate):
    _check_against_sklearn(*_multi_hot(7, 50, 6, rate=rate))


def test_zero_division_gives_zero():
    predicted = np.array([[0, 1, 0], [0, 0, 0]])
    targets = np.array([[0, 0, 1], [0, 0, 0]])
    # label 0: nothing true or predicted; label 1: only a false positive; 2: only a false negative
    scores = multilabel_scores(predicted, targets, ["a", "b", "c"])
    assert [(r["precision"], r["recall"], r["f1"]) for r in scores["per_label"]] == [(0.0,) * 3] * 3
    assert scores["micro_f1"] == 0.0 and scores["macro_f1"] == 0.0
    assert scores["subset_accuracy"] == 0.5
    _check_against_sklearn(predicted, targets)
    empty = multilabel_scores(np.zeros((2, 2)), np.zeros((2, 2)), ["a", "b"])
    assert empty["micro_precision"] == empty["micro_recall"] == empty["micro_f1"] == 0.0
    assert empty["subset_accuracy"] == 1.0


def test_examples_are_rows_and_labels_are_columns():
    # 2 examples x 3 labels. Right: micro TP=2, FP=1, FN=1 -> F1 = 4/6. Pairing one matrix's
    # cells by rows with the other's by columns (a wrong flatten) finds TP=1 -> F1 = 2/6.
    predicted = np.array([[1, 0, 0], [1, 1, 0]])
    targets = np.array([[1, 0, 0], [1, 0, 1]])
    scores = multilabel_scores(predicted, targets, ["a", "b", "c"])
    assert scores["micro_f1"] == pytest.approx(4 / 6)
    wrong_true_positives = np.sum(predicted.reshape(-1) & targets.T.reshape(-1))
    wrong_f1 = 2 * wrong_true_positives / (predicted.sum() + targets.sum())
    assert wrong_f1 == pytest.approx(2 / 6)  # the mistake guarded against really differs
    # Per label = per column: "a" is right twice, "b" has one false positive, "c" one false
    # negative; counting along the wrong axis would give one entry per example instead.
    assert scores["per_label"] == [
        {"label": "a", "precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2},
        {"label": "b", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0},
        {"label": "c", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
    ]
    assert scores["macro_f1"] == pytest.approx(1 / 3)
    # Subset accuracy is per row: 4 of 6 cells are right, and 1 of 2 rows wholly.
    assert scores["subset_accuracy"] == 0.5
    _check_against_sklearn(predicted, targets)


def test_macro_is_over_labels_not_examples():
    predicted = np.array([[1, 1, 1], [0, 0, 0], [0, 0, 1]])
    targets = np.array([[1, 1, 1], [1, 0, 0], [0, 0, 1]])
    scores = multilabel_scores(predicted, targets, ["a", "b", "c"])
    # Per label F1: a = 2/3, b = 1, c = 1 -> macro 8/9; per example it would be (1 + 0 + 1) / 3.
    assert scores["macro_f1"] == pytest.approx(8 / 9)
    assert scores["macro_recall"] == pytest.approx((0.5 + 1 + 1) / 3)


def test_memory_layout_does_not_matter():
    predicted, targets = _multi_hot(3, 30, 4)
    expected = multilabel_scores(predicted, targets, _labels(4))
    assert multilabel_scores(np.asfortranarray(predicted), targets.T.T, _labels(4)) == expected
    bools = multilabel_scores(predicted.astype(bool), targets.astype(float), _labels(4))
    assert bools == expected


@pytest.mark.parametrize(
    "predicted,targets,labels,message",
    [
        (np.zeros((4, 3)), np.zeros((3, 4)), "abc", "columns for 3 labels"),
        (np.zeros((4, 3)), np.zeros((5, 3)), "abc", r"shape \(4, 3\) but targets has shape"),
        (np.zeros(3), np.zeros(3), "abc", "2-D example x label matrix"),
        (np.zeros((2, 2, 3)), np.zeros((2, 2, 3)), "abc", "2-D example x label matrix"),
        (np.full((2, 3), 2), np.zeros((2, 3)), "abc", "other than 0 and 1"),
        (np.zeros((2, 3)), np.full((2, 3), 0.5), "abc", "other than 0 and 1"),
        (np.zeros((0, 3)), np.zeros((0, 3)), "abc", "No examples"),
        (np.zeros((2, 0)), np.zeros((2, 0)), "", "No labels"),
    ],
)
def test_bad_inputs_are_refused(predicted, targets, labels, message):
    with pytest.raises(ValueError, match=message):
        multilabel_scores(predicted, targets, list(labels))
