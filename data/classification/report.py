"""Per-class reports and the confusion matrix: rows for `eval_report.tsv`, the matrix as
`confusion_matrix.tsv` and `confusion_matrix.png`.

A report is a list of rows `{"label", "precision", "recall", "f1", "support"}`:

* `class_report` (single-label class ids): one row per class, then `accuracy`, `macro avg` and
  `weighted avg`, as scikit-learn's classification_report (the `accuracy` row, like that
  report's text, has precision and recall None, the accuracy as f1 and every example as support).
* `multilabel_report` (a `multilabel_scores` dict): one row per label, then `micro avg` and
  `macro avg`.

A ratio with a zero denominator is 0.0 (scikit-learn's zero_division=0). Every file is written
atomically; matplotlib loads only when a plot is drawn, on the Agg canvas (no pyplot).
"""

import io
import os

import numpy as np

from data.classification._arrays import class_ids, safe_divide
from data.classification.multilabel_metrics import multilabel_scores
from data.classification.thresholds import apply_thresholds
from fileio.atomic import write_atomically

REPORT_HEADER = ("label", "precision", "recall", "f1", "support")


def confusion_matrix(predictions, targets, num_labels):
    """Counts of (true class, predicted class) pairs.

    Args:
        predictions: int array [N] of predicted class ids in [0, num_labels).
        targets: int array [N] of true class ids.
        num_labels: C, the number of classes.

    Returns:
        int64 array [C, C]: row = true class, column = predicted class.
    """
    num_labels = int(num_labels)
    if num_labels < 1:
        raise ValueError(f"num_labels={num_labels}; there must be at least one class.")
    predictions = class_ids(predictions, "predictions", num_labels)
    targets = class_ids(targets, "targets", num_labels)
    if predictions.shape != targets.shape:
        raise ValueError(
            f"{predictions.size} predictions for {targets.size} targets; they must match."
        )
    pairs = targets * num_labels + predictions
    counts = np.bincount(pairs, minlength=num_labels * num_labels)
    return counts.reshape(num_labels, num_labels).astype(np.int64)


def _row(label, precision, recall, f1, support):
    return {
        "label": label,
        "precision": None if precision is None else float(precision),
        "recall": None if recall is None else float(recall),
        "f1": float(f1),
        "support": int(support),
    }


def class_report(predictions, targets, labels):
    """Per-class precision, recall, F1 and support of single-label predictions.

    Args:
        predictions: int array [N] of predicted class ids.
        targets: int array [N] of true class ids.
        labels: the C class names in class-id order.

    Returns:
        A list of C + 3 rows: one per class in class-id order, then `accuracy`, `macro avg` (the
        unweighted mean over classes) and `weighted avg` (weighted by support); the three last
        rows have the number of examples as support.
    """
    labels = list(labels)
    matrix = confusion_matrix(predictions, targets, len(labels))
    total = int(matrix.sum())
    if not total:
        raise ValueError("No examples to report on; predictions and targets are empty.")
    true_positives = np.diag(matrix)
    predicted = matrix.sum(axis=0)
    support = matrix.sum(axis=1)
    precision = safe_divide(true_positives, predicted)
    recall = safe_divide(true_positives, support)
    f1 = safe_divide(2 * true_positives, predicted + support)
    rows = [
        _row(label, precision[c], recall[c], f1[c], support[c]) for c, label in enumerate(labels)
    ]
    weights = support / total
    rows.append(_row("accuracy", None, None, true_positives.sum() / total, total))
    rows.append(_row("macro avg", precision.mean(), recall.mean(), f1.mean(), total))
    rows.append(
        _row(
            "weighted avg",
            np.dot(weights, precision),
            np.dot(weights, recall),
            np.dot(weights, f1),
            total,
        )
    )
    return rows


def multilabel_report(scores):
    """Report rows of a `multilabel_metrics.multilabel_scores` dict.

    Returns:
        One row per label in class-id order, then `micro avg` and `macro avg`, whose support is
        the sum of the labels' supports (the positive cells of the targets).
    """
    rows = [
        _row(r["label"], r["precision"], r["recall"], r["f1"], r["support"])
        for r in scores["per_label"]
    ]
    total = sum(r["support"] for r in rows)
    for kind in ("micro", "macro"):
        rows.append(
            _row(
                f"{kind} avg",
                scores[f"{kind}_precision"],
                scores[f"{kind}_recall"],
                scores[f"{kind}_f1"],
                total,
            )
        )
    return rows


def _cell(text):
    text = str(text)
    if any(ch in text for ch in "\t\r\n"):
        raise ValueError(f"Label {text!r} holds a tab or line break; fix the label names.")
    return text


def write_report_tsv(path, rows):
    """Writes report rows as TSV: header `label precision recall f1 support`, scores with 4
    decimals (an empty cell for None), support as an integer."""

    def score(value):
        return "" if value is None else f"{value:.4f}"

    lines = ["\t".join(REPORT_HEADER)]
    for row in rows:
        cells = [_cell(row["label"]), score(row["precision"]), score(row["recall"])]
        lines.append("\t".join(cells + [score(row["f1"]), str(int(row["support"]))]))
    write_atomically(path, "\n".join(lines) + "\n")


def _checked_matrix(matrix, labels):
    matrix = np.asarray(matrix)
    if matrix.shape != (len(labels), len(labels)):
        raise ValueError(
            f"The confusion matrix has shape {matrix.shape} for {len(labels)} labels; it must be "
            "[C, C] with one row and one column per label."
        )
    return matrix.astype(np.int64)


def write_confusion_tsv(path, matrix, labels):
    """Writes the confusion matrix as TSV: a header row `true/predicted` and the predicted
    labels, then per true class its label and the counts."""
    labels = [_cell(label) for label in labels]
    matrix = _checked_matrix(matrix, labels)
    lines = ["\t".join(["true/predicted"] + labels)]
    for label, counts in zip(labels, matrix, strict=True):
        lines.append("\t".join([label] + [str(int(n)) for n in counts]))
    write_atomically(path, "\n".join(lines) + "\n")


def _short(label, width=24):
    # Cut in the middle: names that share a prefix often differ at the end ("..._2", "..._3").
    label = str(label)
    if len(label) <= width:
        return label
    head = (width - 1) // 2
    return label[:head] + "…" + label[head + 1 - width :]


def plot_confusion_matrix(path, matrix, labels):
    """Draws the confusion matrix as a PNG: counts in the cells, colours by the fraction of
    each true class (row-normalised), true labels on the y axis, predicted on the x axis.

    Sized for up to about 30 classes: beyond 12 the cells of 0 stay blank, beyond 50 the counts
    are left out (the colours remain), and labels longer than 24 characters are shortened in the middle.

    Args:
        path: the PNG to write, e.g. `<output_dir>/confusion_matrix.png`.
        matrix: int array [C, C] from `confusion_matrix`.
        labels: the C class names in class-id order.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = [str(label) for label in labels]
    matrix = _checked_matrix(matrix, labels)
    size = len(labels)
    # Rows are normalised so a rare class's mistakes show as clearly as a frequent one's.
    fractions = safe_divide(matrix, matrix.sum(axis=1, keepdims=True))

    side = min(max(5.0, 0.5 * size + 3.0), 24.0)
    figure = Figure(figsize=(side + 1.5, side), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    image = axes.imshow(fractions, cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest")
    colorbar = figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    colorbar.set_label("fraction of the true class")

    tick_size = 10 if size <= 12 else 8 if size <= 30 else 6
    ticks = np.arange(size)
    axes.set_xticks(ticks)
    axes.set_yticks(ticks)
    axes.set_xticklabels([_short(x) for x in labels], rotation=45 if size <= 12 else 90)
    axes.set_yticklabels([_short(y) for y in labels])
    axes.tick_params(labelsize=tick_size)
    if size <= 12:
        for tick in axes.get_xticklabels():
            tick.set_horizontalalignment("right")
            tick.set_rotation_mode("anchor")
    axes.set_xlabel("predicted label")
    axes.set_ylabel("true label")
    axes.set_title("Confusion matrix (counts; colour: fraction of the row)")

    if size <= 50:  # beyond that the numbers no longer fit their cells
        count_size = 10 if size <= 10 else 8 if size <= 20 else 7 if size <= 30 else 6
        # Beyond 12 classes most cells are 0; those stay blank so the mistakes stand out.
        shown = matrix != 0 if size > 12 else np.ones(matrix.shape, dtype=bool)
        for true, guess in zip(*np.nonzero(shown), strict=True):
            axes.text(
                guess,
                true,
                str(matrix[true, guess]),
                ha="center",
                va="center",
                fontsize=count_size,
                color="white" if fractions[true, guess] > 0.5 else "black",
            )

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    write_atomically(path, buffer.getvalue())


# A classifier run's report files (run_classifier.py --do_eval).
REPORT_FILE = "eval_report.tsv"
CONFUSION_FILE = "confusion_matrix.tsv"
CONFUSION_PLOT = "confusion_matrix.png"


def write_report_files(output_dir, problem_type, label_names, predictions, labels, thresholds=None):
    """Writes `eval_report.tsv` (per class: precision, recall, F1, support) and, single-label,
    `confusion_matrix.tsv` and `confusion_matrix.png` into `output_dir`; nothing for regression.

    Args:
        output_dir: the run's folder.
        problem_type: "single_label", "multi_label" or "regression".
        label_names: class names in class-id order.
        predictions: class probabilities `[N, C]` (multi-label: each label's).
        labels: true class ids `[N]`, or multi-hot `[N, C]`.
        thresholds: multi-label: the decision threshold of each label `[C]`.
    """
    if problem_type == "regression":
        return
    truth = np.asarray(labels).astype(np.int64)
    if problem_type == "multi_label":
        chosen = apply_thresholds(predictions, thresholds)
        rows = multilabel_report(multilabel_scores(chosen, truth, label_names))
        write_report_tsv(os.path.join(output_dir, REPORT_FILE), rows)
        return
    ids = np.argmax(predictions, axis=-1)
    write_report_tsv(os.path.join(output_dir, REPORT_FILE), class_report(ids, truth, label_names))
    matrix = confusion_matrix(ids, truth, len(label_names))
    write_confusion_tsv(os.path.join(output_dir, CONFUSION_FILE), matrix, label_names)
    plot_confusion_matrix(os.path.join(output_dir, CONFUSION_PLOT), matrix, label_names)
