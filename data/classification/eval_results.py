"""A classifier run's dev scores beyond GLUE: the `eval_results.txt` entries and report files
of a user's own task, single-label, multi-label or regression.

GLUE and XNLI tasks keep their official metrics (`data.glue.metrics`); every other task
(`--task_name` not a GLUE name, or a `--processor`) is scored by its problem type:

| Problem type | Keys | Official (ranks runs) |
|---|---|---|
| single-label | `eval_accuracy`, `eval_macro_f1` | `eval_accuracy` |
| multi-label | `eval_micro_f1`, `eval_macro_f1`, `eval_subset_accuracy`, `eval_micro_precision`, `eval_micro_recall`, `eval_threshold` | `eval_micro_f1` |
| regression | `eval_pearson`, `eval_spearman`, `eval_mse` | `eval_spearman` |

plus `eval_loss` and `loss` as every run. Multi-label scores are those of the decision
thresholds chosen on the same dev set (`choose_thresholds`), the ones the run saves.
"""

import numpy as np

from data.classification import thresholds as threshold_rules
from data.classification.multilabel_metrics import multilabel_scores
from data.classification.report import class_report
from data.glue import metrics
from data.glue.processors import is_glue_processor

SINGLE_LABEL, MULTI_LABEL, REGRESSION = "single_label", "multi_label", "regression"
# The official dev metric of each problem type (data.dev_metrics reads it).
OFFICIAL = {
    SINGLE_LABEL: "eval_accuracy",
    MULTI_LABEL: "eval_micro_f1",
    REGRESSION: "eval_spearman",
}
DECISION_THRESHOLDS = ("global", "per_label")


def parse_decision_threshold(text):
    """`--decision_threshold`: "global", "per_label" or a probability, as given or a float.

    Raises:
        ValueError: anything else, naming the flag.
    """
    text = str(text).strip()
    if text in DECISION_THRESHOLDS:
        return text
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0.0 < value < 1.0:
        raise ValueError(
            f"--decision_threshold={text}: use global (one threshold chosen on dev), per_label "
            "(one per label, chosen on dev) or a probability between 0 and 1, e.g. 0.5."
        )
    return value


def choose_thresholds(probabilities, targets, how, min_positives):
    """The multi-label decision thresholds `[C]` for `how` (`parse_decision_threshold`'s value).

    Args:
        probabilities: float `[N, C]` dev probabilities.
        targets: int `[N, C]` multi-hot dev labels.
        how: "global", "per_label" or a fixed probability.
        min_positives: per_label: labels with fewer positive dev examples keep the global one.
    """
    num_labels = np.shape(probabilities)[1]
    if not isinstance(how, str):
        return np.full(num_labels, float(how))
    if how == "per_label":
        return np.asarray(
            threshold_rules.best_label_thresholds(probabilities, targets, min_positives), float
        )
    return np.full(num_labels, float(threshold_rules.best_global_threshold(probabilities, targets)))


def own_task_results(problem_type, predictions, labels, label_names, thresholds=None):
    """The dev entries of a non-GLUE task (module docstring), without the losses.

    Args:
        problem_type: `SINGLE_LABEL`, `MULTI_LABEL` or `REGRESSION`.
        predictions: class probabilities `[N, C]`, sigmoid probabilities `[N, C]` or scores
            `[N]`, real examples only.
        labels: class ids `[N]`, multi-hot `[N, C]` or true scores `[N]`.
        label_names: the class names, in class-id order.
        thresholds: multi-label: float `[C]`.

    Returns:
        dict of key -> float.
    """
    if problem_type == REGRESSION:
        scores = np.reshape(predictions, [-1]).astype(np.float64)
        truth = np.reshape(labels, [-1]).astype(np.float64)
        return {
            "eval_pearson": metrics.pearson(scores, truth),
            "eval_spearman": metrics.spearman(scores, truth),
            "eval_mse": float(np.mean(np.square(scores - truth))),
        }
    if problem_type == MULTI_LABEL:
        predicted = threshold_rules.apply_thresholds(predictions, thresholds)
        scores = multilabel_scores(predicted, np.asarray(labels, np.int64), label_names)
        results = {
            f"eval_{k}": float(scores[k])
            for k in ("micro_f1", "macro_f1", "subset_accuracy", "micro_precision", "micro_recall")
        }
        # One threshold for all labels is reported; per-label ones are in thresholds.txt.
        if np.allclose(thresholds, thresholds[0]):
            results["eval_threshold"] = float(thresholds[0])
        return results
    ids = np.argmax(predictions, axis=-1)
    rows = class_report(ids, np.asarray(labels, np.int64), label_names)
    macro = next(row for row in rows if row["label"] == "macro avg")
    return {
        "eval_accuracy": metrics.accuracy(ids, labels),
        "eval_macro_f1": float(macro["f1"]),
    }


def problem_type_of(processor):
    """`SINGLE_LABEL`, `MULTI_LABEL` or `REGRESSION`: what a `DataProcessor`'s labels are."""
    if processor.is_regression:
        return REGRESSION
    if getattr(processor, "is_multi_label", False):
        return MULTI_LABEL
    return SINGLE_LABEL


def classifier_eval_results(processor, task_name, outputs, batch_size, prefix="", thresholds=None):
    """A classifier run's eval_results entries from its per-example dev outputs: the original's
    `eval_loss` and `loss`, plus the GLUE task's official metrics or `own_task_results`.

    Args:
        processor: the run's `DataProcessor`.
        task_name: the run's --task_name (a GLUE task's picks its metrics).
        outputs: numpy `predictions`, `labels`, `per_example_loss` and `real` per example.
        batch_size: the evaluation batch size (the original's `loss` is the mean of each
            batch's mean).
        prefix: a further dev set's name (MNLI's `mismatched`): keys `eval_<prefix>_...`.
        thresholds: multi-label: float `[C]`.
    """
    real = outputs["real"] > 0
    losses = outputs["per_example_loss"]
    batch_means = [losses[i : i + batch_size].mean() for i in range(0, len(losses), batch_size)]
    predictions = outputs["predictions"]
    labels = outputs["labels"]
    problem = problem_type_of(processor)
    results = {"eval_loss": float(losses[real].mean()), "loss": float(np.mean(batch_means))}
    if is_glue_processor(processor):
        if problem == SINGLE_LABEL:
            predictions = np.argmax(predictions, axis=-1)
            results["eval_accuracy"] = float(metrics.accuracy(predictions[real], labels[real]))
        results.update(metrics.glue_metrics(task_name, predictions[real], labels[real]))
    else:
        names = processor.get_labels()
        results.update(
            own_task_results(problem, predictions[real], labels[real], names, thresholds)
        )
    if prefix:
        results = {
            k.replace("eval_", f"eval_{prefix}_", 1)
            if k.startswith("eval_")
            else f"{prefix}_{k}": v
            for k, v in results.items()
        }
    return results
