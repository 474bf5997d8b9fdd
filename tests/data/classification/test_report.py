"""data/classification/report.py against scikit-learn (used here only), and its files."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn import metrics as skm

from data.classification.multilabel_metrics import multilabel_scores
from data.classification.report import (
    class_report,
    confusion_matrix,
    multilabel_report,
    plot_confusion_matrix,
    write_confusion_tsv,
    write_report_tsv,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Classes without true or predicted examples are part of the cases on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")


def _classes(seed, size, num_classes, agreement=0.6):
    rng = np.random.default_rng(seed)
    targets = rng.integers(0, num_classes, size)
    noise = rng.integers(0, num_classes, size)
    return np.where(rng.random(size) < agreement, targets, noise), targets


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("size,num_classes", [(1, 2), (10, 3), (300, 6)])
def test_confusion_matrix_matches_sklearn(seed, size, num_classes):
    predictions, targets = _classes(seed, size, num_classes)
    matrix = confusion_matrix(predictions, targets, num_classes)
    assert matrix.dtype == np.int64
    expected = skm.confusion_matrix(targets, predictions, labels=range(num_classes))
    assert matrix.tolist() == expected.tolist()


def test_confusion_matrix_rows_are_true_classes():
    matrix = confusion_matrix([1, 1, 2], [0, 0, 0], 3)  # three class-0 examples, mistaken
    assert matrix.tolist() == [[0, 2, 1], [0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize(
    "predictions,targets,num_labels,message",
    [
        ([0, 3], [0, 1], 3, r"outside \[0, 3\)"),
        ([0, -1], [0, 1], 3, r"outside \[0, 3\)"),
        ([0, 1], [0, 1, 2], 3, "2 predictions for 3 targets"),
        ([[0, 1]], [[0, 1]], 3, "vector"),
        ([0.5, 1], [0, 1], 3, "non-integer"),
        ([0], [0], 0, "at least one class"),
    ],
)
def test_bad_class_ids_are_refused(predictions, targets, num_labels, message):
    with pytest.raises(ValueError, match=message):
        confusion_matrix(predictions, targets, num_labels)


def _as_sklearn(rows):
    """Our rows keyed as classification_report(output_dict=True) keys them."""
    out = {}
    for row in rows:
        if row["label"] == "accuracy":
            out["accuracy"] = row["f1"]
        else:
            out[row["label"]] = {
                "precision": row["precision"],
                "recall": row["recall"],
                "f1-score": row["f1"],
                "support": row["support"],
            }
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("size,num_classes", [(1, 2), (12, 4), (400, 5)])
def test_class_report_matches_sklearn(seed, size, num_classes):
    predictions, targets = _classes(seed, size, num_classes)
    labels = [f"class {c}" for c in range(num_classes)]
    rows = class_report(predictions, targets, labels)
    assert [r["label"] for r in rows] == labels + ["accuracy", "macro avg", "weighted avg"]
    expected = skm.classification_report(
        targets,
        predictions,
        labels=range(num_classes),
        target_names=labels,
        output_dict=True,
        zero_division=0,
    )
    ours = _as_sklearn(rows)
    assert list(ours) == list(expected)
    assert ours["accuracy"] == pytest.approx(expected["accuracy"], abs=1e-12)
    for key in ours:
        if key != "accuracy":
            for field, value in ours[key].items():
                assert value == pytest.approx(expected[key][field], abs=1e-12), (key, field)
    accuracy = rows[num_classes]
    assert accuracy["precision"] is None and accuracy["recall"] is None
    assert accuracy["support"] == size


def test_class_report_of_a_class_never_seen():
    rows = class_report([0, 0, 1], [0, 1, 1], ["a", "b", "c"])
    assert rows[2] == {"label": "c", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}


def test_multilabel_report_rows():
    predicted = np.array([[1, 0, 0], [1, 1, 0]])
    targets = np.array([[1, 0, 0], [1, 0, 1]])
    scores = multilabel_scores(predicted, targets, ["a", "b", "c"])
    rows = multilabel_report(scores)
    assert [r["label"] for r in rows] == ["a", "b", "c", "micro avg", "macro avg"]
    assert rows[0] == {"label": "a", "precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2}
    assert rows[3]["f1"] == scores["micro_f1"] and rows[3]["support"] == 3
    assert rows[4]["precision"] == scores["macro_precision"] and rows[4]["support"] == 3
    expected = skm.classification_report(
        targets, predicted, target_names=["a", "b", "c"], output_dict=True, zero_division=0
    )
    for row in rows:
        for field, key in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
            assert row[field] == pytest.approx(expected[row["label"]][key], abs=1e-12)
        assert row["support"] == expected[row["label"]]["support"]


def test_report_tsv(tmp_path):
    path = str(tmp_path / "eval_report.tsv")
    rows = class_report([0, 1, 1, 2], [0, 1, 2, 2], ["neg", "neutral", "pos"])
    write_report_tsv(path, rows)
    assert os.listdir(tmp_path) == ["eval_report.tsv"]
    with open(path, encoding="utf-8") as f:
        assert f.read() == (
            "label\tprecision\trecall\tf1\tsupport\n"
            "neg\t1.0000\t1.0000\t1.0000\t1\n"
            "neutral\t0.5000\t1.0000\t0.6667\t1\n"
            "pos\t1.0000\t0.5000\t0.6667\t2\n"
            "accuracy\t\t\t0.7500\t4\n"
            "macro avg\t0.8333\t0.8333\t0.7778\t4\n"
            "weighted avg\t0.8750\t0.7500\t0.7500\t4\n"
        )
    with pytest.raises(ValueError, match="tab or line break"):
        write_report_tsv(path, [dict(rows[0], label="a\tb")])


def test_confusion_tsv(tmp_path):
    path = str(tmp_path / "confusion_matrix.tsv")
    matrix = confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], 3)
    write_confusion_tsv(path, matrix, ["neg", "neutral", "pos"])
    with open(path, encoding="utf-8") as f:
        assert f.read() == (
            "true/predicted\tneg\tneutral\tpos\nneg\t1\t0\t0\nneutral\t0\t1\t0\npos\t0\t1\t1\n"
        )
    with pytest.raises(ValueError, match=r"shape \(3, 3\) for 2 labels"):
        write_confusion_tsv(path, matrix, ["neg", "pos"])


@pytest.mark.parametrize("num_classes", [2, 30])
def test_confusion_plot_is_a_png(tmp_path, num_classes):
    from matplotlib import image

    predictions, targets = _classes(0, 500, num_classes, agreement=0.9)
    predictions[predictions == 1] = 0  # class 1 never predicted; an empty row below
    targets[targets == num_classes - 1] = 0
    labels = [f"a rather long label name {c}" for c in range(num_classes)]
    path = str(tmp_path / "confusion_matrix.png")
    plot_confusion_matrix(path, confusion_matrix(predictions, targets, num_classes), labels)
    assert os.listdir(tmp_path) == ["confusion_matrix.png"]
    with open(path, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE
    height, width = image.imread(path).shape[:2]
    assert 300 < height < 3000 and 300 < width < 3000


def test_the_package_loads_without_tensorflow_or_matplotlib():
    code = (
        "import sys, data.classification.report, data.classification.thresholds, "
        "data.classification.class_weights; "
        "print(sorted(m for m in ('tensorflow', 'matplotlib', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[3],
    )
    assert out.stdout.strip() == "[]"
