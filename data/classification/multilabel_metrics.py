"""Multi-label scores of an example x label {0,1} matrix, as scikit-learn computes them.

`multilabel_scores(predicted, targets, labels)` counts true positives, false positives and false
negatives per label (per column of the [N, C] matrices), then:

* micro: precision, recall and F1 of the counts summed over all labels;
* macro: the unweighted mean over labels of each label's precision, recall and F1;
* subset accuracy: the fraction of examples (rows) whose whole label set is predicted exactly.

A ratio with a zero denominator is 0.0 (scikit-learn's zero_division=0). F1 is
`2 TP / (2 TP + FP + FN)`, which equals `2 P R / (P + R)` wherever that is defined.
"""

import numpy as np

from data.classification._arrays import binary_matrix, safe_divide, same_shape


def _prf(true_positives, false_positives, false_negatives):
    precision = safe_divide(true_positives, true_positives + false_positives)
    recall = safe_divide(true_positives, true_positives + false_negatives)
    f1 = safe_divide(2 * true_positives, 2 * true_positives + false_positives + false_negatives)
    return precision, recall, f1


def multilabel_scores(predicted, targets, labels):
    """Micro, macro and per-label precision, recall and F1, and subset accuracy.

    Args:
        predicted: int {0,1} array [N, C]: row = example, column = label (class id order).
        targets: int {0,1} array [N, C], the true multi-hot labels.
        labels: the C label names, in class-id order.

    Returns:
        A dict of floats `micro_precision`, `micro_recall`, `micro_f1`, `macro_precision`,
        `macro_recall`, `macro_f1`, `subset_accuracy`, and `per_label`: a list of C dicts
        `{"label", "precision", "recall", "f1", "support"}` in class-id order (support: the
        label's true positives in `targets`, an int).

    Raises:
        ValueError: the arrays are not 2-D {0,1} matrices of the same shape with one column
            per label, or there are no examples.
    """
    labels = list(labels)
    if not labels:
        raise ValueError("No labels given; pass the label names in class-id order.")
    predicted = binary_matrix(predicted, "predicted", len(labels))
    targets = binary_matrix(targets, "targets", len(labels))
    same_shape(predicted, targets, "predicted", "targets")
    if not predicted.shape[0]:
        raise ValueError("No examples to score; predicted and targets have 0 rows.")

    # Counts per column: axis 0 runs over examples, so each label is scored on its own column.
    true_positives = np.sum(predicted & targets, axis=0)
    false_positives = np.sum(predicted & (1 - targets), axis=0)
    false_negatives = np.sum((1 - predicted) & targets, axis=0)
    support = np.sum(targets, axis=0)

    precision, recall, f1 = _prf(true_positives, false_positives, false_negatives)
    micro_precision, micro_recall, micro_f1 = _prf(
        true_positives.sum(), false_positives.sum(), false_negatives.sum()
    )
    per_label = [
        {
            "label": label,
            "precision": float(precision[c]),
            "recall": float(recall[c]),
            "f1": float(f1[c]),
            "support": int(support[c]),
        }
        for c, label in enumerate(labels)
    ]
    return {
        "micro_precision": float(micro_precision),
        "micro_recall": float(micro_recall),
        "micro_f1": float(micro_f1),
        "macro_precision": float(np.mean(precision)),
        "macro_recall": float(np.mean(recall)),
        "macro_f1": float(np.mean(f1)),
        # A row counts only if every one of its labels is right.
        "subset_accuracy": float(np.mean(np.all(predicted == targets, axis=1))),
        "per_label": per_label,
    }
