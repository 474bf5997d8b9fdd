"""Class weights for imbalanced training data, and the `--class_weights` flag's value.

* `balanced_class_weights` (single-label, softmax cross-entropy): scikit-learn's "balanced"
  weights `n_samples / (n_classes * count_c)`, so every class weighs as much in the loss in total.
* `balanced_positive_weights` (multi-label, binary cross-entropy): per label
  `negatives / positives`, the `pos_weight` that makes a label's positive examples weigh as much
  as its negative ones.
* `parse_class_weights`: `--class_weights` is empty or `none` (no weights), `balanced`, or one
  positive number per label, comma-separated, in class-id order.
"""

import math

import numpy as np

from data.classification._arrays import binary_matrix, class_ids
from fileio.errors import UserError

_LISTED = 50  # labels named in a message before the rest are counted


def _label_list(labels):
    shown = ", ".join(repr(label) for label in labels[:_LISTED])
    rest = len(labels) - _LISTED
    return shown + (f" and {rest} more" if rest > 0 else "")


def balanced_class_weights(label_ids, labels):
    """scikit-learn's "balanced" weights of single-label training data.

    Args:
        label_ids: int array [N] of the training examples' class ids.
        labels: the C class names in class-id order.

    Returns:
        float64 array [C]: `N / (C * count_c)`.

    Raises:
        UserError (a ValueError): a class has no training example.
    """
    labels = list(labels)
    if not labels:
        raise ValueError("No labels given; pass the label names in class-id order.")
    label_ids = class_ids(label_ids, "label_ids", len(labels))
    counts = np.bincount(label_ids, minlength=len(labels))
    for c in np.flatnonzero(counts == 0):
        raise UserError(
            f"Class {labels[c]!r} (class id {c}) has no training example, so its balanced weight "
            "is undefined: pass --class_weights with explicit numbers, one per label, or add "
            "examples of that class."
        )
    return label_ids.size / (len(labels) * counts.astype(np.float64))


def balanced_positive_weights(multi_hot, labels):
    """Per-label positive weights (binary cross-entropy's pos_weight) of multi-label data.

    Args:
        multi_hot: int {0,1} array [N, C] of the training examples' labels.
        labels: the C label names in class-id order.

    Returns:
        float64 array [C]: per label, its negative examples / its positive examples.

    Raises:
        UserError (a ValueError): a label has no positive example, or no negative one (a weight
            of 0 would switch off its positive examples' loss).
    """
    labels = list(labels)
    if not labels:
        raise ValueError("No labels given; pass the label names in class-id order.")
    multi_hot = binary_matrix(multi_hot, "multi_hot", len(labels))
    positives = multi_hot.sum(axis=0)
    negatives = multi_hot.shape[0] - positives
    for c in range(len(labels)):
        if not positives[c] or not negatives[c]:
            which = "positive" if not positives[c] else "negative"
            raise UserError(
                f"Label {labels[c]!r} (class id {c}) has no {which} training example, so its "
                "balanced positive weight (negatives / positives) is undefined or 0: pass "
                "--class_weights with explicit numbers, one per label, or add such examples."
            )
    return negatives / positives.astype(np.float64)


def parse_class_weights(text, labels):
    """The value of `--class_weights`.

    Args:
        text: the flag's value: "" or "none", "balanced", or comma-separated numbers.
        labels: the C label names in class-id order.

    Returns:
        None (no weights), the string "balanced", or a list of C positive floats.

    Raises:
        UserError (a ValueError): anything else (a word, a non-positive or non-finite number,
            or a count other than C).
    """
    labels = list(labels)
    value = (text or "").strip()
    if value.lower() in ("", "none"):
        return None
    if value.lower() == "balanced":
        return "balanced"
    fix = (
        f"pass 'balanced', 'none' or {len(labels)} positive numbers separated by commas, one per "
        f"label in class-id order ({_label_list(labels)})"
    )
    weights = []
    for part in value.split(","):
        try:
            weight = float(part)
        except ValueError:
            raise UserError(
                f"--class_weights={text!r}: {part.strip()!r} is not a number; {fix}."
            ) from None
        if not math.isfinite(weight) or weight <= 0:
            raise UserError(
                f"--class_weights={text!r}: {part.strip()!r} is not a positive number; {fix}."
            )
        weights.append(weight)
    if len(weights) != len(labels):
        raise UserError(
            f"--class_weights={text!r} gives {len(weights)} weights for {len(labels)} labels; "
            f"{fix}."
        )
    return weights


def class_weights_for(text, labels, label_ids, multi_label):
    """The loss weights `[C]` of a `--class_weights` value, or None without one.

    Args:
        text: the flag's value (None, "", "none", "balanced" or one number per label).
        labels: the class names in class-id order.
        label_ids: the training examples' class ids `[N]` (multi-hot `[N, C]` for multi-label),
            what "balanced" is computed from; empty when the run does not train.
        multi_label: the weights are each label's positive weight.

    Raises:
        ValueError: a bad value, or "balanced" without training labels, naming the flag.
    """
    weights = parse_class_weights(text or "", labels)
    if weights is None:
        return None
    if weights != "balanced":
        return np.asarray(weights, np.float32)
    if not len(label_ids):
        raise UserError(
            "--class_weights=balanced is computed from the training labels: use it with "
            "--do_train, or give one number per label."
        )
    if multi_label:
        return np.asarray(balanced_positive_weights(np.asarray(label_ids), labels), np.float32)
    return np.asarray(balanced_class_weights(np.asarray(label_ids), labels), np.float32)
