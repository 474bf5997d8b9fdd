"""`test_predictions.tsv`: a classifier's predictions with their labels named.

The original's `test_results.tsv` (probabilities only, `data.glue.submission`) stays as it is;
this file is the one a person or a script reads: one row per test example, in file order,

* single-label: `index`, `label` (the most probable class), then each class's probability;
* multi-label: `index`, `labels` (the labels at or above their thresholds, joined by `,`),
  then each label's probability;
* regression: `index`, `score`.

with a header row naming the columns.
"""

import numpy as np

from data.classification.thresholds import apply_thresholds
from fileio.atomic import write_atomically

PREDICTIONS_FILE = "test_predictions.tsv"


def _cell(text):
    # A label with a tab or newline would shift the columns.
    return str(text).replace("\t", " ").replace("\n", " ")


def predicted_labels(probabilities, label_names, thresholds=None):
    """The label(s) of each row: a string per row (single-label) or a list (multi-label).

    Args:
        probabilities: float `[N, C]`.
        label_names: the class names in class-id order.
        thresholds: None (single-label: the most probable class), or float `[C]` (multi-label).
    """
    probabilities = np.asarray(probabilities)
    if thresholds is None:
        return [label_names[i] for i in np.argmax(probabilities, axis=-1)]
    chosen = apply_thresholds(probabilities, thresholds)
    return [[label_names[i] for i in np.flatnonzero(row)] for row in chosen]


def prediction_file_text(predictions, label_names, problem_type, thresholds=None):
    """The text of `test_predictions.tsv` (module docstring).

    Args:
        predictions: float `[N, C]` probabilities, or `[N]` scores for regression.
        label_names: class names in class-id order (unused for regression).
        problem_type: "single_label", "multi_label" or "regression".
        thresholds: multi-label: float `[C]`.
    """
    if problem_type == "regression":
        scores = np.reshape(np.asarray(predictions, np.float32), [-1])
        return "index\tscore\n" + "".join(f"{i}\t{s}\n" for i, s in enumerate(scores))
    probabilities = np.asarray(predictions, np.float32)
    multi = problem_type == "multi_label"
    names = predicted_labels(probabilities, label_names, thresholds if multi else None)
    header = ["index", "labels" if multi else "label", *(_cell(n) for n in label_names)]
    lines = ["\t".join(header) + "\n"]
    for index, (name, row) in enumerate(zip(names, probabilities, strict=True)):
        shown = ",".join(_cell(n) for n in name) if multi else _cell(name)
        lines.append("\t".join([str(index), shown, *(str(p) for p in row)]) + "\n")
    return "".join(lines)


def write_prediction_file(path, predictions, label_names, problem_type, thresholds=None):
    """Writes `test_predictions.tsv` (see `prediction_file_text`), atomically."""
    write_atomically(path, prediction_file_text(predictions, label_names, problem_type, thresholds))
