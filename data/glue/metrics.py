"""The official GLUE metrics, in numpy.

`glue_metrics(task_name, predictions, labels)` returns the task's metrics under these keys
(added to `eval_loss`, `global_step` and `loss` in eval_results.txt):

| Task | Keys |
|---|---|
| CoLA | `eval_accuracy`, `eval_mcc` (Matthews correlation, the official metric) |
| MRPC, QQP | `eval_accuracy`, `eval_f1` (F1 of class 1) |
| STS-B | `eval_pearson`, `eval_spearman` |
| SST-2, MNLI, QNLI, RTE, WNLI, AX, XNLI | `eval_accuracy` |

All values are Python floats. A correlation of constant predictions is undefined and is NaN.
"""

import numpy as np

from data.glue.processors import canonical_task_name


def _pair(predictions, labels, dtype):
    predictions = np.asarray(predictions, dtype=dtype).reshape(-1)
    labels = np.asarray(labels, dtype=dtype).reshape(-1)
    if predictions.shape != labels.shape:
        raise ValueError(
            f"{predictions.size} predictions for {labels.size} labels; they must match."
        )
    if not predictions.size:
        raise ValueError("No predictions to score.")
    return predictions, labels


def accuracy(predictions, labels):
    """Fraction of predicted class ids equal to the labels.

    Args:
        predictions: int array [N] of class ids.
        labels: int array [N].
    """
    predictions, labels = _pair(predictions, labels, np.int64)
    return float(np.mean(predictions == labels))


def f1(predictions, labels):
    """F1 score of the positive class 1 (0.0 when there are no true or predicted positives)."""
    predictions, labels = _pair(predictions, labels, np.int64)
    true_positives = np.sum((predictions == 1) & (labels == 1))
    denominator = np.sum(predictions == 1) + np.sum(labels == 1)
    return float(2 * true_positives / denominator) if denominator else 0.0


def matthews_corrcoef(predictions, labels):
    """Matthews correlation coefficient (multi-class form; 0.0 when undefined).

    With the confusion matrix C, `s` examples, `c` correct, `p_k` predicted and `t_k` true counts
    of class k: `(c*s - sum p_k t_k) / sqrt((s^2 - sum p_k^2) (s^2 - sum t_k^2))`.
    """
    predictions, labels = _pair(predictions, labels, np.int64)
    classes, indices = np.unique(np.concatenate([predictions, labels]), return_inverse=True)
    predicted = np.bincount(indices[: predictions.size], minlength=classes.size).astype(np.float64)
    true = np.bincount(indices[predictions.size :], minlength=classes.size).astype(np.float64)
    samples = float(predictions.size)
    correct = float(np.sum(predictions == labels))
    numerator = correct * samples - np.dot(predicted, true)
    denominator = np.sqrt(samples**2 - np.dot(predicted, predicted)) * np.sqrt(
        samples**2 - np.dot(true, true)
    )
    return float(numerator / denominator) if denominator else 0.0


def pearson(predictions, labels):
    """Pearson correlation of two float arrays [N] (NaN if either is constant)."""
    x, y = _pair(predictions, labels, np.float64)
    x = x - x.mean()
    y = y - y.mean()
    denominator = np.sqrt(np.dot(x, x) * np.dot(y, y))
    return float(np.dot(x, y) / denominator) if denominator else float("nan")


def _average_ranks(values):
    """Ranks from 1, tied values sharing the mean of their ranks."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    # Each run of equal values gets the mean of the positions it spans.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], values.size]
    run_ranks = (starts + ends + 1) / 2.0
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(run_ranks, ends - starts)
    return ranks


def spearman(predictions, labels):
    """Spearman rank correlation: Pearson of the ranks, ties ranked by their average."""
    x, y = _pair(predictions, labels, np.float64)
    return pearson(_average_ranks(x), _average_ranks(y))


def glue_metrics(task_name, predictions, labels):
    """The official metrics of a GLUE (or XNLI) task on one evaluation set.

    Args:
        task_name: a task name as accepted by `data.glue.processors.get_processor`.
        predictions: class ids [N] (argmax of the logits), or predicted scores [N] for STS-B.
        labels: label ids [N], or true scores for STS-B.

    Returns:
        dict of metric key -> float; keys as in the module docstring.

    Raises:
        ValueError: for an unknown task or arrays of different lengths.
    """
    key = canonical_task_name(task_name)
    if key is None:
        raise ValueError(f"No metrics for unknown task {task_name!r}.")
    if key == "stsb":
        return {
            "eval_pearson": pearson(predictions, labels),
            "eval_spearman": spearman(predictions, labels),
        }
    results = {"eval_accuracy": accuracy(predictions, labels)}
    if key == "cola":
        results["eval_mcc"] = matthews_corrcoef(predictions, labels)
    elif key in ("mrpc", "qqp"):
        results["eval_f1"] = f1(predictions, labels)
    return results
