"""What a sweep found: each trial's status and dev score, the best trial and its outputs.

`collect` reads the trials back from the study (so every process of a shared sweep reports the
same), `write_results` writes `sweep_results.json` and `copy_best` the best trial's output files
to `best/`. TensorFlow-free.
"""

import json
import math
import os
import shutil

from optuna.trial import TrialState

from data.dev_metrics import read_eval_history
from fileio.atomic import atomic_directory, write_atomically
from sweep.trial import Trial, trial_dir

STATUS = {
    TrialState.COMPLETE: "complete",
    TrialState.PRUNED: "pruned",
    TrialState.FAIL: "failed",
    TrialState.RUNNING: "running",
    TrialState.WAITING: "waiting",
}
# Metrics whose chance level is 0: a run at or below it learnt nothing from the task.
_CORRELATIONS = ("eval_mcc", "eval_spearman")
# Files of a trial that are not its results: checkpoints, records, TensorBoard events.
_NOT_RESULTS = ("model.ckpt-", "checkpoint", "events.out.tfevents")


def is_degenerate(metric, value, history):
    """True if a finished run learnt nothing the dev metric can see.

    A correlation (CoLA's MCC, STS-B's Spearman) at or below 0, an F1 of 0 (SQuAD, NER), or a
    classifier that predicted one class for every dev example (from its last evaluation's
    `predicted_classes` in eval_history.jsonl), which Dodge et al. 2020 count as failed runs.
    """
    if value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return True
    if metric in _CORRELATIONS or metric == "f1":
        return value <= 0
    if history and history[-1].get("predicted_classes") is not None:
        predicted = history[-1]["predicted_classes"]
        return sum(1 for count in predicted.values() if count) <= 1
    return metric == "eval_f1" and value <= 0


def collect(study, sweep_dir, metric, wanted_keys=None):
    """The sweep's trials with their outcomes, one per trial of the grid (its newest attempt).

    Args:
        study: the sweep's Optuna study.
        sweep_dir: --sweep_dir (trial folders are under `trials/`).
        metric: the dev metric's key.
        wanted_keys: the trials of this command's grid, in order; trials of a narrower grid
            run earlier are listed after them.

    Returns:
        [`Trial`], in that order.
    """
    newest = {}
    for trial in study.get_trials(deepcopy=False):
        key = trial.user_attrs.get("key")
        if key is None:
            continue
        if key not in newest or _rank(trial) >= _rank(newest[key]):
            newest[key] = trial
    order = list(wanted_keys or ()) + sorted(set(newest) - set(wanted_keys or ()))
    rows = []
    for key in order:
        if key not in newest:
            continue
        trial = newest[key]
        attrs = trial.user_attrs
        value = trial.value if trial.state == TrialState.COMPLETE else None
        reported = trial.intermediate_values
        complete = trial.state == TrialState.COMPLETE
        rows.append(
            Trial.from_study(
                attrs,
                sweep_dir,
                status=STATUS.get(trial.state, trial.state.name.lower()),
                dev_metric=value,
                last_reported=reported[max(reported)] if reported else None,
                # Only a complete trial's history is read: the others have no final score.
                degenerate=complete
                and is_degenerate(metric, value, read_eval_history(trial_dir(sweep_dir, key))),
                step=attrs.get("step"),
                error=attrs.get("error"),
                wall_s=attrs.get("wall_s"),
            )
        )
    return rows


def _rank(trial):
    # A finished attempt outranks a failed one; among equals the newest counts.
    finished = trial.state in (TrialState.COMPLETE, TrialState.PRUNED)
    return (finished, trial.state == TrialState.RUNNING, trial.number)


def best_trial(rows):
    """The complete `Trial` with the highest dev metric (the first of equals), or None."""
    complete = [
        r
        for r in rows
        if r.status == "complete" and r.dev_metric is not None and r.dev_metric == r.dev_metric
    ]
    return max(complete, key=lambda r: r.dev_metric, default=None)


def write_results(sweep_dir, metric, rows, best):
    """Writes `sweep_results.json`: {"metric", "trials", "best"}, each trial as
    `Trial.as_json` gives it (null for no best)."""
    trials = [row.as_json() for row in rows]
    data = {"metric": metric, "trials": trials, "best": None if best is None else best.as_json()}
    path = os.path.join(sweep_dir, "sweep_results.json")
    write_atomically(path, json.dumps(data, indent=2) + "\n")
    return path


def delete_training_checkpoints(output_dir):
    """Deletes a finished trial's training checkpoints (`model.ckpt-*` and the `checkpoint`
    index); its results and best_checkpoint/ stay. Returns the bytes freed."""
    freed = 0
    for name in os.listdir(output_dir):
        path = os.path.join(output_dir, name)
        if os.path.isfile(path) and (name.startswith("model.ckpt-") or name == "checkpoint"):
            freed += os.path.getsize(path)
            os.remove(path)
    return freed


def copy_best(sweep_dir, best):
    """Copies the best trial's result files (leaderboard file, test_results.tsv,
    predictions.json, eval_results.txt, ...) and its best_checkpoint/ to `<sweep_dir>/best/`.

    Args:
        sweep_dir: --sweep_dir.
        best: `best_trial`'s `Trial`, or None.

    Returns:
        The folder written, or None without a best trial.
    """
    if best is None:
        return None
    source = best.output_dir
    target = os.path.join(sweep_dir, "best")
    with atomic_directory(target, overwrite=True) as temp:
        os.makedirs(temp)
        for name in sorted(os.listdir(source)):
            path = os.path.join(source, name)
            if os.path.isfile(path) and not name.endswith(".tf_record"):
                if not name.startswith(_NOT_RESULTS):
                    shutil.copy2(path, os.path.join(temp, name))
            elif name == "best_checkpoint" and os.path.isdir(path):
                shutil.copytree(path, os.path.join(temp, name))
        text = json.dumps(best.as_json(), indent=2) + "\n"
        write_atomically(os.path.join(temp, "trial.json"), text)
    return target
