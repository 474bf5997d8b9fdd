"""The official dev metric of each fine-tuning task: the `eval_results.txt` key that ranks runs.

One home for the choice, read by the runners' periodic evaluation (`--eval_every_steps`, which
keeps the best checkpoint by it) and by run_sweep.py (which ranks trials by it):

| Runner | Task | Key | Scale |
|---|---|---|---|
| run_classifier | CoLA | `eval_mcc` (Matthews correlation) | -1 .. 1 |
| run_classifier | MRPC, QQP | `eval_f1` (F1 of class 1) | 0 .. 1 |
| run_classifier | STS-B | `eval_spearman` | -1 .. 1 |
| run_classifier | the other GLUE tasks, XNLI | `eval_accuracy` | 0 .. 1 |
| run_squad | SQuAD 1.1 and 2.0 | `f1` (the official script's F1) | 0 .. 100 |
| run_ner | CoNLL-format NER | `eval_f1` (conlleval's entity F1) | 0 .. 1 |

Every metric here is better when higher. TensorFlow-free.
"""

import json
import os

from data.glue.processors import canonical_task_name

RUNNERS = ("classifier", "squad", "ner")

_GLUE = {"cola": "eval_mcc", "mrpc": "eval_f1", "qqp": "eval_f1", "stsb": "eval_spearman"}


def official_metric(runner, task_name=None):
    """The `eval_results.txt` key of the official dev metric of `runner` (one of `RUNNERS`).

    Args:
        runner: "classifier", "squad" or "ner".
        task_name: the classifier's --task_name (any spelling the processors accept).

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
    if key is None:
        raise ValueError(f"No dev metric for unknown task {task_name!r}.")
    return _GLUE.get(key, "eval_accuracy")


def read_eval_results(output_dir, filename="eval_results.txt"):
    """The `key = value` lines of a run's eval_results.txt as {key: float or str}; {} if absent."""
    results = {}
    try:
        with open(os.path.join(output_dir, filename), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return results
    for line in lines:
        key, sep, value = line.partition(" = ")
        if sep:
            try:
                results[key.strip()] = float(value)
            except ValueError:
                results[key.strip()] = value.strip()
    return results


def read_eval_history(output_dir):
    """The dev evaluations of a run, from its eval_history.jsonl; a partial last line (a process
    stopped while writing it) is ignored, and a step evaluated twice keeps its last line."""
    try:
        with open(os.path.join(output_dir, "eval_history.jsonl"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return []
    by_step = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        by_step[entry["step"]] = entry
    return [by_step[s] for s in sorted(by_step)]
