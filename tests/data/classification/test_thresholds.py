"""data/classification/thresholds.py against brute-force searches computed here."""

import os
import time

import numpy as np
import pytest

from data.classification.multilabel_metrics import multilabel_scores
from data.classification.thresholds import (
    apply_thresholds,
    best_global_threshold,
    best_label_thresholds,
    read_thresholds_file,
    write_thresholds_file,
)


def _dev_set(seed, rows, cols, decimals=2):
    """Probabilities that follow the targets loosely, rounded so many of them tie."""
    rng = np.random.default_rng(seed)
    targets = (rng.random((rows, cols)) < 0.3).astype(np.int64)
    probabilities = np.clip(0.35 * targets + rng.random((rows, cols)) * 0.65, 0.0, 1.0)
    return np.round(probabilities, decimals), targets


def _f1(predicted, targets):
    true_positives = np.sum(predicted & targets)
    denominator = predicted.sum() + targets.sum()
    return 2 * true_positives / denominator if denominator else 0.0


def _naive_candidates(values):
    """Every distinct value, every midpoint, 0.5 and both ends: a superset of the decisions."""
    distinct = np.unique(values)
    middles = (distinct[:-1] + distinct[1:]) / 2
    return np.concatenate([distinct, middles, [0.0, 0.5, 1.0, 1.5]])


def _brute_force_best(probabilities, targets):
    return max(
        _f1((probabilities >= t).astype(np.int64), targets)
        for t in _naive_candidates(probabilities)
    )


def _micro_f1(probabilities, targets, thresholds):
    predicted = apply_thresholds(probabilities, thresholds)
    labels = [str(c) for c in range(targets.shape[1])]
    return multilabel_scores(predicted, targets, labels)["micro_f1"]


def test_apply_thresholds():
    probabilities = np.array([[0.2, 0.5, 0.9], [0.5, 0.49, 0.1]])
    assert apply_thresholds(probabilities, 0.5).tolist() == [[0, 1, 1], [1, 0, 0]]
    per_label = apply_thresholds(probabilities, [0.1, 0.6, 0.9])
    assert per_label.tolist() == [[1, 0, 1], [1, 0, 0]]
    assert per_label.dtype == np.int64
    # Compared in float64: float32(0.9) is a little below 0.9, as chosen thresholds expect.
    assert apply_thresholds(probabilities.astype(np.float32), 0.9)[0, 2] == 0
    with pytest.raises(ValueError, match="one threshold per label"):
        apply_thresholds(probabilities, [0.5, 0.5])
    with pytest.raises(ValueError, match="2-D example x label matrix"):
        apply_thresholds(probabilities[0], 0.5)
    with pytest.raises(ValueError, match="NaN"):
        apply_thresholds(probabilities, float("nan"))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape,decimals", [((30, 4), 1), ((40, 5), 2), ((25, 3), 6)])
def test_global_threshold_reaches_the_brute_force_maximum(seed, shape, decimals):
    probabilities, targets = _dev_set(seed, *shape, decimals)
    threshold = best_global_threshold(probabilities, targets)
    best = _brute_force_best(probabilities, targets)
    assert _micro_f1(probabilities, targets, threshold) == pytest.approx(best, abs=1e-12)
    # No point of a fine grid does better either.
    grid = max(_micro_f1(probabilities, targets, t) for t in np.linspace(0, 1, 401))
    assert grid <= best + 1e-12


def test_float32_probabilities_are_thresholded_as_given():
    probabilities, targets = _dev_set(3, 50, 4, decimals=7)
    probabilities = probabilities.astype(np.float32)
    threshold = best_global_threshold(probabilities, targets)
    best = _brute_force_best(probabilities.astype(np.float64), targets)
    assert _micro_f1(probabilities, targets, threshold) == pytest.approx(best, abs=1e-12)


def test_a_flat_optimum_keeps_one_half():
    probabilities = np.array([[0.2, 0.8], [0.3, 0.9]])
    targets = np.array([[0, 1], [0, 1]])
    # Every threshold in (0.3, 0.8] is perfect; 0.5 is one of them.
    assert best_global_threshold(probabilities, targets) == 0.5


def test_ties_go_to_the_candidate_closest_to_one_half():
    # Predicting all 4 and predicting only 0.9 both give F1 2/3: 0.85 is closer to 0.5 than
    # the threshold below the minimum (0.05).
    probabilities = np.array([[0.1], [0.2], [0.8], [0.9]])
    targets = np.array([[1], [0], [0], [1]])
    assert best_global_threshold(probabilities, targets) == pytest.approx(0.85)
    # A cut away from 0.5: the midpoint between 0.2 and 0.3.
    probabilities = np.array([[0.1], [0.2], [0.3], [0.4]])
    targets = np.array([[0], [0], [1], [1]])
    assert best_global_threshold(probabilities, targets) == pytest.approx(0.25)


def test_the_ends_of_the_range():
    # Everything positive: the threshold below the minimum.
    probabilities = np.array([[0.2], [0.3]])
    assert best_global_threshold(probabilities, np.array([[1], [1]])) == pytest.approx(0.1)
    # No positive at all: every threshold scores 0, so 0.5 is kept.
    assert best_global_threshold(np.array([[0.0, 1.0]]), np.array([[0, 0]])) == 0.5
    # Exact 0 and 1 probabilities, and neighbouring floats, still split where they should.
    low = 0.7
    high = np.nextafter(low, 1.0)
    probabilities = np.array([[0.0, low], [high, 1.0]])
    targets = np.array([[0, 0], [1, 1]])
    threshold = best_global_threshold(probabilities, targets)
    assert low < threshold <= high
    assert apply_thresholds(probabilities, threshold).tolist() == targets.tolist()


def test_one_sort_not_one_scoring_per_candidate():
    # 400,000 distinct probabilities: a search re-scoring each candidate over the matrix
    # would take hours; sorting once takes a fraction of a second.
    probabilities, targets = _dev_set(0, 2000, 200, decimals=12)
    start = time.perf_counter()
    best_global_threshold(probabilities, targets)
    best_label_thresholds(probabilities, targets)
    assert time.perf_counter() - start < 10.0


@pytest.mark.parametrize("seed", range(4))
def test_label_thresholds_reach_each_labels_maximum(seed):
    probabilities, targets = _dev_set(seed, 60, 5)
    thresholds = best_label_thresholds(probabilities, targets, min_positives=1)
    assert thresholds.shape == (5,) and thresholds.dtype == np.float64
    for c in range(5):
        column = probabilities[:, c : c + 1], targets[:, c : c + 1]
        assert _micro_f1(*column, thresholds[c]) == pytest.approx(
            _brute_force_best(*column), abs=1e-12
        )
        assert thresholds[c] == best_global_threshold(*column)  # same rule, same ties


def test_labels_with_few_dev_positives_get_the_fallback():
    probabilities, targets = _dev_set(5, 80, 4)
    targets[:, 1] = 0
    targets[:3, 1] = 1  # 3 positives
    targets[:, 3] = 0  # none
    global_threshold = best_global_threshold(probabilities, targets)
    own = best_label_thresholds(probabilities, targets, min_positives=0)

    guarded = best_label_thresholds(probabilities, targets)  # min_positives=5
    assert guarded[[1, 3]].tolist() == [global_threshold] * 2
    assert guarded[[0, 2]].tolist() == own[[0, 2]].tolist()
    assert best_label_thresholds(probabilities, targets, min_positives=3)[1] == own[1]

    fixed = best_label_thresholds(probabilities, targets, fallback=0.4)
    assert fixed[[1, 3]].tolist() == [0.4, 0.4]
    assert own[3] == 0.5  # no positive: F1 is 0 everywhere, 0.5 is kept


@pytest.mark.parametrize(
    "probabilities,targets,message",
    [
        (np.full((2, 2), 1.5), np.zeros((2, 2)), r"outside \[0, 1\]"),
        (np.full((2, 2), np.nan), np.zeros((2, 2)), "NaN"),
        (np.zeros((2, 2)), np.zeros((2, 3)), "columns for 2 labels"),
        (np.zeros((2, 2)), np.zeros((3, 2)), "shape"),
        (np.zeros((0, 2)), np.zeros((0, 2)), "No dev examples"),
        (np.zeros(4), np.zeros(4), "2-D"),
    ],
)
def test_bad_dev_sets_are_refused(probabilities, targets, message):
    with pytest.raises(ValueError, match=message):
        best_global_threshold(probabilities, targets)
    with pytest.raises(ValueError, match=message):
        best_label_thresholds(probabilities, targets)


LABELS = ["sports", "politics", "tech and science"]


def test_thresholds_file_round_trip(tmp_path):
    path = str(tmp_path / "thresholds.txt")
    values = [0.1 + 0.2, 1 / 3, float(np.nextafter(1.0, 2.0))]
    write_thresholds_file(path, LABELS, np.array(values, dtype=np.float64))
    assert os.listdir(tmp_path) == ["thresholds.txt"]  # no temporary file left
    with open(path, encoding="utf-8") as f:
        assert f.read() == (
            "sports\t0.30000000000000004\npolitics\t0.3333333333333333\n"
            "tech and science\t1.0000000000000002\n"
        )
    read = read_thresholds_file(path, LABELS)
    assert read.dtype == np.float64 and read.tolist() == values  # bit-exact
    chosen = best_label_thresholds(*_dev_set(1, 40, 3), min_positives=2)
    write_thresholds_file(path, LABELS, chosen)
    assert read_thresholds_file(path, LABELS).tolist() == chosen.tolist()


def test_windows_line_ends_are_read(tmp_path):
    path = tmp_path / "thresholds.txt"
    path.write_bytes(b"sports\t0.5\r\npolitics\t0.25\r\ntech and science\t0.75\r\n")
    assert read_thresholds_file(str(path), LABELS).tolist() == [0.5, 0.25, 0.75]


@pytest.mark.parametrize(
    "text,line,problem",
    [
        ("politics\t0.5\nsports\t0.5\ntech and science\t0.5\n", 1, "label 'politics' where"),
        ("sports\t0.5\nPolitics\t0.5\ntech and science\t0.5\n", 2, "class id 1 is 'politics'"),
        ("sports\t0.5\npolitics\t0.5\n", 3, "missing"),
        ("", 1, "missing"),
        ("sports\t0.5\npolitics\t0.5\ntech and science\t0.5\nart\t0.5\n", 4, "extra line"),
        ("sports\t0.5\npolitics\tabc\ntech and science\t0.5\n", 2, "'abc' is not a finite"),
        ("sports\tnan\npolitics\t0.5\ntech and science\t0.5\n", 1, "'nan' is not a finite"),
        ("sports 0.5\npolitics\t0.5\ntech and science\t0.5\n", 1, "is not `label<TAB>thresh"),
        ("sports\t0.5\n\npolitics\t0.5\ntech and science\t0.5\n", 2, "is not `label<TAB>thresh"),
        ("sports\t0.5\tx\npolitics\t0.5\ntech and science\t0.5\n", 1, "is not `label<TAB>"),
    ],
)
def test_bad_thresholds_files_are_refused(tmp_path, text, line, problem):
    path = str(tmp_path / "thresholds.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    with pytest.raises(ValueError) as raised:
        read_thresholds_file(path, LABELS)
    message = str(raised.value)
    assert message.startswith(f"{path} line {line}: ")
    assert problem in message
    assert "choose the thresholds on dev again" in message


def test_bad_thresholds_are_not_written(tmp_path):
    path = str(tmp_path / "thresholds.txt")
    with pytest.raises(ValueError, match="2 thresholds for 3 labels"):
        write_thresholds_file(path, LABELS, [0.5, 0.5])
    with pytest.raises(ValueError, match="non-finite"):
        write_thresholds_file(path, LABELS, [0.5, np.inf, 0.5])
    with pytest.raises(ValueError, match="tab or line break"):
        write_thresholds_file(path, ["a\tb", "c", "d"], [0.5, 0.5, 0.5])
    assert os.listdir(tmp_path) == []
