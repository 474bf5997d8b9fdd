"""Multi-label decision thresholds chosen on dev, and `thresholds.txt`.

A label is predicted when its sigmoid probability `p >= t`. The thresholds are chosen on dev:

* `best_global_threshold`: one `t` for every label, maximizing micro-F1 over the whole
  example x label matrix.
* `best_label_thresholds`: one `t` per label, maximizing that label's F1; a label with fewer than
  `min_positives` positive dev examples gets a fallback instead (by default the global
  threshold), since a threshold fitted to two or three positives does not carry over to test.

Only the ordering of the probabilities matters, so the candidates are one threshold per distinct
decision: below the smallest probability (every cell positive), the midpoint between each two
consecutive distinct probabilities, above the largest (no cell positive), and 0.5. Among
candidates of equal F1 the one closest to 0.5 wins (then the lower), so a flat optimum keeps the
usual 0.5 when it contains it. The probabilities are sorted once and the true positives of every
cut come from one cumulative count: O(M log M) for M cells, not one scoring per candidate.

`thresholds.txt` holds one `label<TAB>threshold` line per label in class-id order, with the
shortest decimal that reads back as the same float (Python's repr).
"""

import os

import numpy as np
from absl import logging

from data.classification._arrays import (
    binary_matrix,
    probability_matrix,
    safe_divide,
    same_shape,
)
from fileio import reading
from fileio.atomic import write_atomically
from fileio.errors import UserError
from fileio.reading import open_for_reading

# A multi-label run's decision thresholds, beside its checkpoints.
THRESHOLDS_FILE = "thresholds.txt"


def apply_thresholds(probabilities, thresholds):
    """The multi-hot predictions `p >= t`.

    Args:
        probabilities: float array [N, C].
        thresholds: a number (every label) or a float array [C] (one per label).

    Returns:
        int64 {0,1} array [N, C].

    The comparison is in float64, where float32 probabilities are exact: a threshold chosen
    between two float32 dev probabilities keeps them apart (in float32 it could round onto one).
    Graph twin: `serving.exports.classifier.apply_thresholds_graph`.
    """
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if probabilities.ndim != 2:
        raise ValueError(
            f"probabilities has shape {probabilities.shape}; it must be a 2-D example x label "
            "matrix [N, C]."
        )
    thresholds = np.asarray(thresholds, dtype=np.float64)
    if thresholds.ndim > 1 or (thresholds.ndim == 1 and thresholds.size != probabilities.shape[1]):
        raise ValueError(
            f"thresholds has shape {thresholds.shape} for {probabilities.shape[1]} labels; pass "
            "one number or one threshold per label."
        )
    if np.any(np.isnan(thresholds)):
        raise ValueError("thresholds holds NaN; every threshold must be a number.")
    # Broadcasting a [C] vector runs along the last axis: one threshold per label column.
    return (probabilities >= thresholds).astype(np.int64)


def _checked(probabilities, targets):
    probabilities = probability_matrix(probabilities)
    targets = binary_matrix(targets, "targets", probabilities.shape[1])
    same_shape(probabilities, targets, "probabilities", "targets")
    if not probabilities.shape[0]:
        raise ValueError("No dev examples to choose thresholds on; probabilities has 0 rows.")
    return probabilities, targets


def _above(value):
    """A threshold above `value` in [0, 1]: the midpoint to 1, or (at 1) the next float."""
    candidate = (value + 1.0) / 2.0
    return candidate if candidate > value else float(np.nextafter(value, np.inf))


def _best_cut(values, positives):
    """The F1-maximizing threshold on one set of cells, and its F1.

    Args:
        values: float64 [M] probabilities in [0, 1], M > 0.
        positives: int {0,1} [M], the true labels of the same cells.

    Returns:
        (threshold, f1) as Python floats.
    """
    order = np.argsort(values, kind="stable")
    ascending = values[order]
    is_positive = positives[order]
    size = ascending.size
    total_positive = int(is_positive.sum())
    # Index of the first cell of each distinct probability; cut j predicts every cell from
    # starts[j] on (values >= distinct[j]); the last cut, starts[k] = size, predicts none.
    first = np.flatnonzero(np.r_[True, ascending[1:] != ascending[:-1]])
    distinct = ascending[first]
    starts = np.r_[first, size]
    positives_below = np.r_[0, np.cumsum(is_positive)]
    predicted = size - starts
    true_positives = total_positive - positives_below[starts]
    # 2 TP / (2 TP + FP + FN) with TP + FP = predicted and TP + FN = total_positive.
    f1 = safe_divide(2 * true_positives, predicted + total_positive)

    lower, upper = distinct[:-1], distinct[1:]
    middle = (lower + upper) / 2.0
    # Adjacent floats can round their midpoint down onto the lower one; the upper one then
    # gives the same decision.
    middle = np.where(middle > lower, middle, upper)
    thresholds = np.r_[distinct[0] / 2.0, middle, _above(distinct[-1]), 0.5]
    f1 = np.r_[f1, f1[np.searchsorted(distinct, 0.5, side="left")]]

    # Equal ratios of integer counts are bit-identical floats (division is correctly rounded),
    # so exact equality finds every tie.
    tied = np.flatnonzero(f1 == f1.max())
    distance = np.abs(thresholds[tied] - 0.5)
    winners = tied[distance == distance.min()]
    best = winners[np.argmin(thresholds[winners])]
    return float(thresholds[best]), float(f1[best])


def best_global_threshold(probabilities, targets):
    """The one threshold maximizing micro-F1 over all labels on dev.

    Args:
        probabilities: float array [N, C] of sigmoid outputs in [0, 1].
        targets: int {0,1} array [N, C], the true multi-hot labels.

    Returns:
        The threshold, a Python float.
    """
    probabilities, targets = _checked(probabilities, targets)
    # Micro-F1 counts every (example, label) cell alike, so the cells are pooled; both
    # matrices are flattened in the same order, keeping each cell's probability with its label.
    threshold, _ = _best_cut(probabilities.reshape(-1), targets.reshape(-1))
    return threshold


def best_label_thresholds(probabilities, targets, min_positives=5, fallback=None):
    """One threshold per label, each maximizing that label's F1 on dev.

    Args:
        probabilities: float array [N, C] of sigmoid outputs in [0, 1].
        targets: int {0,1} array [N, C].
        min_positives: a label with fewer positive dev examples than this gets `fallback`.
        fallback: the threshold of those labels; None: `best_global_threshold` of the whole
            matrix.

    Returns:
        float64 array [C].
    """
    probabilities, targets = _checked(probabilities, targets)
    if int(min_positives) != min_positives or min_positives < 0:
        raise ValueError(f"min_positives={min_positives!r}; it must be an integer >= 0.")
    if fallback is not None and not np.isfinite(float(fallback)):
        raise ValueError(f"fallback={fallback!r}; it must be a finite number or None.")
    positive_counts = targets.sum(axis=0)
    thresholds = np.empty(probabilities.shape[1], dtype=np.float64)
    for c in range(probabilities.shape[1]):
        if positive_counts[c] < min_positives:
            if fallback is None:
                fallback = best_global_threshold(probabilities, targets)
            thresholds[c] = float(fallback)
        else:
            thresholds[c], _ = _best_cut(probabilities[:, c], targets[:, c])
    return thresholds


def _check_label_names(labels):
    for label in labels:
        if not label or any(ch in label for ch in "\t\r\n"):
            raise ValueError(
                f"Label {label!r} is empty or holds a tab or line break; thresholds.txt needs "
                "one label per line: fix the label names."
            )


def write_thresholds_file(path, labels, thresholds):
    """Writes `label<TAB>threshold` lines in class-id order, atomically.

    Args:
        path: the file, e.g. `<output_dir>/thresholds.txt`.
        labels: the C label names in class-id order.
        thresholds: float array [C], finite.
    """
    labels = [str(label) for label in labels]
    _check_label_names(labels)
    thresholds = np.asarray(thresholds, dtype=np.float64)
    if thresholds.shape != (len(labels),):
        raise ValueError(
            f"{thresholds.size} thresholds for {len(labels)} labels; give one per label."
        )
    if not np.all(np.isfinite(thresholds)):
        raise ValueError("thresholds holds a non-finite value; every threshold must be a number.")
    # repr is the shortest decimal that reads back as the same float64.
    text = "".join(f"{label}\t{float(t)!r}\n" for label, t in zip(labels, thresholds, strict=True))
    write_atomically(path, text)


def _file_error(path, line_number, problem):
    return UserError(
        f"{path} line {line_number}: {problem}; the file must hold one `label<TAB>threshold` "
        "line per label of labels.txt, in class-id order: choose the thresholds on dev again "
        "with the same labels, or correct the line."
    )


def read_thresholds_file(path, labels):
    """Reads a thresholds file written by `write_thresholds_file` for these labels.

    Args:
        path: the file.
        labels: the C label names in class-id order (the run's labels.txt); the file must list
            exactly these, in this order.

    Returns:
        float64 array [C].

    Raises:
        UserError (a ValueError): a line is malformed, names another label, holds a bad
            number, or lines are missing or extra.
    """
    labels = [str(label) for label in labels]
    with open_for_reading(path) as handle:
        text = handle.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    thresholds = np.empty(len(labels), dtype=np.float64)
    for index, line in enumerate(lines):
        number = index + 1
        line = line.removesuffix("\r")
        if index >= len(labels):
            raise _file_error(
                path, number, f"an extra line {line!r} after the {len(labels)} labels"
            )
        fields = line.split("\t")
        if len(fields) != 2:
            raise _file_error(path, number, f"{line!r} is not `label<TAB>threshold`")
        label, value = fields
        if label != labels[index]:
            raise _file_error(
                path,
                number,
                f"label {label!r} where class id {index} is {labels[index]!r}",
            )
        try:
            thresholds[index] = float(value)
        except ValueError:
            thresholds[index] = np.nan
        if not np.isfinite(thresholds[index]):
            raise _file_error(path, number, f"{value!r} is not a finite number")
    if len(lines) < len(labels):
        missing = len(lines)
        raise _file_error(
            path,
            missing + 1,
            f"missing (the file ends after {missing} lines; label {labels[missing]!r}, class id "
            f"{missing}, has no threshold)",
        )
    return thresholds


def saved_thresholds(how, folders, labels):
    """The thresholds `[C]` of a multi-label run that does not evaluate: `how` when it is a
    number (--decision_threshold), else the first `thresholds.txt` of `folders` (the run's
    output_dir, its --init_checkpoint's folder), else 0.5 with a warning."""
    if not isinstance(how, str):
        return np.full(len(labels), float(how))
    for folder in folders:
        path = os.path.join(folder, THRESHOLDS_FILE)
        if reading.is_file(path):
            logging.info("Decision thresholds from %s", path)
            return read_thresholds_file(path, labels)
    logging.warning(
        "No %s in --output_dir or beside --init_checkpoint: labels are predicted at "
        "probability 0.5. Run --do_eval to choose thresholds on the dev set.",
        THRESHOLDS_FILE,
    )
    return np.full(len(labels), 0.5)
