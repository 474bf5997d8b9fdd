"""The official dev metric of each fine-tuning task: the `eval_results.txt` key that ranks runs.

One home for the choice, read by the runners' periodic evaluation (`--eval_every_steps`, which
keeps the best checkpoint by it) and by run_sweep.py (which ranks trials by it):

| Runner | Task | Key | Scale |
|---|---|---|---|
| run_classifier | CoLA | `eval_mcc` (Matthews correlation) | -1 .. 1 |
| run_classifier | MRPC, QQP | `eval_f1` (F1 of class 1) | 0 .. 1 |
| run_classifier | STS-B | `eval_spearman` | -1 .. 1 |
| run_classifier | the other GLUE tasks, XNLI | `eval_accuracy` | 0 .. 1 |
| run_classifier | own data, single-label | `eval_accuracy` | 0 .. 1 |
| run_classifier | own data, multi-label | `eval_micro_f1` | 0 .. 1 |
| run_classifier | own data, regression | `eval_spearman` | -1 .. 1 |
| run_squad | SQuAD 1.1 and 2.0 | `f1` (the official script's F1) | 0 .. 100 |
| run_ner | CoNLL-format NER | `eval_f1` (conlleval's entity F1) | 0 .. 1 |

Every metric here is better when higher; `metric_range` gives its Scale by key (run_sweep.py's
plots keep their bands inside it). The runners log each dev evaluation in
`eval_history.jsonl` (`read_eval_history` reads it). TensorFlow-free.
"""

import json
import os

from data.glue.processors import canonical_task_name
from fileio import reading

RUNNERS = ("classifier", "squad", "ner")

_GLUE = {"cola": "eval_mcc", "mrpc": "eval_f1", "qqp": "eval_f1", "stsb": "eval_spearman"}
# A task of the user's own, by problem type (data.classification.eval_results: its keys).
_OWN = {
    "single_label": "eval_accuracy",
    "multi_label": "eval_micro_f1",
    "regression": "eval_spearman",
}
# The values each official metric can take (the table's Scale column), by key.
_RANGES = {
    "eval_mcc": (-1.0, 1.0),
    "eval_spearman": (-1.0, 1.0),
    "eval_f1": (0.0, 1.0),
    "eval_accuracy": (0.0, 1.0),
    "eval_micro_f1": (0.0, 1.0),
    "f1": (0.0, 100.0),
}


def official_metric(runner, task_name=None, problem_type=None):
    """The `eval_results.txt` key of the official dev metric of `runner` (one of `RUNNERS`).

    Args:
        runner: "classifier", "squad" or "ner".
        task_name: the classifier's --task_name (any spelling the processors accept).
        problem_type: a classifier task of the user's own (not a GLUE name):
            "single_label" (`eval_accuracy`), "multi_label" (`eval_micro_f1`) or
            "regression" (`eval_spearman`).

    Raises:
        ValueError: an unknown runner, or a classifier task that is not known.
    """
    if runner == "squad":
        return "f1"
    if runner == "ner":
        return "eval_f1"
    if runner != "classifier":
        raise ValueError(f"No dev metric for runner {runner!r}; expected one of {RUNNERS}.")
    key = canonical_task_name(task_name) if task_name else None
    if key is None and problem_type in _OWN:
        return _OWN[problem_type]
    if key is None:
        raise ValueError(f"No dev metric for unknown task {task_name!r}.")
    return _GLUE.get(key, "eval_accuracy")


def metric_range(metric):
    """(lowest, highest) value of the official metric `metric` (an `official_metric` key), or
    None for a key that is not one."""
    return _RANGES.get(metric)


# A run's dev evaluations, one JSON object a line, appended after each (`read_eval_history`).
EVAL_HISTORY = "eval_history.jsonl"
# The weights of the best dev evaluation so far, in the original's layout (--eval_every_steps).
BEST_CHECKPOINT = "best_checkpoint"


def history_entry(step, metric, results, predicted_classes=None):
    """One line of `eval_history.jsonl`: the evaluation of the weights at `step`.

    Args:
        step: the global step evaluated.
        metric: the official metric's key (`official_metric`).
        results: every `eval_results.txt` entry of the evaluation.
        predicted_classes: label -> how many dev examples were predicted as it (classification
            only: a run predicting one class only is degenerate).

    Returns:
        `{"step", "metric", "value", "results"[, "predicted_classes"]}`, plain JSON types.
    """
    plain = {k: (int(v) if k == "global_step" else float(v)) for k, v in results.items()}
    entry = {"step": int(step), "metric": metric, "value": plain[metric], "results": plain}
    if predicted_classes is not None:
        entry["predicted_classes"] = {str(k): int(n) for k, n in predicted_classes.items()}
    return entry


def history_line(entry):
    """`entry` as one line of `eval_history.jsonl`, newline included."""
    return json.dumps(entry, sort_keys=True) + "\n"


def read_eval_history(output_dir):
    """The dev evaluations of the run in `output_dir`, in order of step; [] when none.

    Lines that are not a whole JSON object are skipped: a process killed while appending
    leaves its last line cut short. A step evaluated twice (a resumed run evaluates the step
    it resumes from again, on the same weights) keeps its last line. A run resumed from an
    older checkpoint than its last evaluation (a newer one was damaged) evaluates those steps
    again, and their new lines supersede the old ones.

    Args:
        output_dir: a run's --output_dir (any file system TensorFlow knows).

    Returns:
        list of dicts as `history_entry` makes them, sorted by "step".
    """
    path = os.path.join(output_dir, EVAL_HISTORY)
    if not reading.is_file(path):
        return []
    by_step = {}
    with reading.open_for_reading(path) as f:
        for line in f.read().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("step"), int):
                by_step[entry["step"]] = entry
    return [by_step[step] for step in sorted(by_step)]


def read_eval_results(output_dir, filename="eval_results.txt"):
    """The `key = value` lines of a run's eval_results.txt as {key: float or str}; {} if absent."""
    path = os.path.join(output_dir, filename)
    if not reading.is_file(path):
        return {}
    results = {}
    with reading.open_for_reading(path) as f:
        lines = f.read().splitlines()
    for line in lines:
        key, sep, value = line.partition(" = ")
        if sep:
            try:
                results[key.strip()] = float(value)
            except ValueError:
                results[key.strip()] = value.strip()
    return results
