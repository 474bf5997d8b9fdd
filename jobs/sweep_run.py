"""A sweep: a grid of settings times random restarts of one fine-tuning runner, best on dev.

run_sweep.py fills `sweep.settings.SweepSettings` from its flags and calls `run_sweep`. Each
trial of the grid is a `sweep.trial.Trial`; trials are the runner's own processes
(`sweep.trial_process`), one per device at a time; the bookkeeping is an Optuna study
(`sweep.study`), so the same command again resumes the sweep and several processes, on one
machine or many, share one sweep. Every process that ends writes the report (`sweep.report`,
`sweep.plots`) from the study, so the last one to end writes the whole sweep's.
"""

import os
import signal
import subprocess
import threading
import time

from absl import logging

from fileio.errors import UserError
from sweep import grid as sweep_grid
from sweep import plots, report, results
from sweep import study as sweep_study
from sweep.trial import Trial, trial_dir
from sweep.trial_process import TrialProcess


def plan(settings, runner_argv, project_root):
    """Checks the command line and returns (command, grid flags, the grid's `Trial`s).

    Raises:
        UserError: anything that would stop a trial from running, before any trial starts.
    """
    command = sweep_grid.parse_runner_command(runner_argv, project_root)
    grid = sweep_grid.parse_grid(settings.grid)
    if settings.vary not in sweep_grid.SEED_FLAGS:
        raise UserError(f"--vary={settings.vary}: use one of {', '.join(sweep_grid.SEED_FLAGS)}.")
    known = sweep_grid.runner_flags(command, settings.python)
    sweep_grid.check_grid(grid, command, settings.restarts, settings.vary, known)
    if settings.prune and not _positive(command.flag_value("eval_every_steps")):
        raise UserError(
            "--prune compares trials by their dev scores during training: add "
            "--eval_every_steps=N (e.g. a tenth of the training steps) to the runner's command."
        )
    seed_flag, seeds = sweep_grid.restart_seeds(command, settings.vary, settings.restarts, known)
    wanted = []
    for setting in sweep_grid.grid_settings(grid):
        for restart in range(settings.restarts):
            key = sweep_grid.trial_name(setting, restart)
            wanted.append(
                Trial(
                    key=key,
                    settings=setting,
                    restart=restart,
                    seed={seed_flag: seeds[restart]},
                    output_dir=trial_dir(settings.sweep_dir, key),
                )
            )
    _dry_run(settings, command, wanted[0])
    return command, list(grid), wanted


def _positive(text):
    try:
        return int(text) > 0
    except (TypeError, ValueError):
        return False


def _dry_run(settings, command, first):
    # The runner checks its flags, config, vocabulary and input files without TensorFlow and
    # without writing: a command line that cannot run is refused before the sweep starts.
    argv = [*_trial_argv(settings, command, first), "--dry_run"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        raise UserError(
            f"The runner's command after `--` cannot run: {lines[-1] if lines else 'no output'}"
        )


def _devices(text):
    devices = [d.strip() for d in text.split(",") if d.strip()] if text else []
    return devices or [None]


class _Progress:
    """`trial 3/8 ended: ... (complete 2, pruned 1, failed 0); 41 s a trial, about 3 min left`."""

    def __init__(self, total, done, workers):
        self.total, self.done, self.workers = total, done, workers
        self.counts = {"complete": 0, "pruned": 0, "failed": 0}
        self.walls, self.lock = [], threading.Lock()
        self.errors = []

    def failing_alike(self):
        """The error of the first trials if they all failed alike (at least two, none done):
        a command line that cannot run, which every other trial would repeat."""
        with self.lock:
            if self.counts["complete"] or self.counts["pruned"] or len(self.errors) < 2:
                return None
            return self.errors[0] if len(set(self.errors)) == 1 else None

    def ended(self, key, outcome):
        with self.lock:
            if outcome.status == "failed":
                self.errors.append(outcome.error)
            self.done += 1
            self.counts[outcome.status] = self.counts.get(outcome.status, 0) + 1
            self.walls.append(outcome.wall_s)
            per_trial = sum(self.walls) / len(self.walls)
            left = max(self.total - self.done, 0) * per_trial / self.workers
            score = "" if outcome.dev_metric is None else f" {outcome.dev_metric:.4f}"
            detail = f": {outcome.error}" if outcome.error else ""
            counts = ", ".join(f"{k} {v}" for k, v in self.counts.items())
            logging.info(
                "trial %d/%d %s %s%s%s (%s); %.0f s a trial, about %.1f min left",
                min(self.done, self.total),
                self.total,
                key,
                outcome.status,
                score,
                detail,
                counts,
                per_trial,
                left / 60,
            )


def _trial_argv(settings, command, trial):
    setting_flags = [f"--{k}={v}" for k, v in trial.settings.items()]
    seed_flags = [f"--{k}={v}" for k, v in trial.seed.items()]
    keep = []
    if settings.keep_checkpoints != "runner" and command.flag_value("keep_checkpoint_max") is None:
        # A trial resumes from its newest checkpoint only; the runner's default of 5 would
        # keep 5 copies of the model and its optimizer slots in every trial's folder.
        keep = ["--keep_checkpoint_max=1"]
    return [
        settings.python,
        command.script,
        *command.args,
        *keep,
        *setting_flags,
        *seed_flags,
        f"--output_dir={trial.output_dir}",
    ]


def _finish(study, trial, outcome):
    from optuna.trial import TrialState

    trial.set_user_attr("wall_s", round(outcome.wall_s, 1))
    if outcome.step is not None:
        trial.set_user_attr("step", outcome.step)
    if outcome.status == "complete":
        study.tell(trial, outcome.dev_metric)
    elif outcome.status == "pruned":
        study.tell(trial, state=TrialState.PRUNED)
    else:
        if outcome.error:
            # Marks a failure of the run itself: retried by the next run of the sweep only.
            trial.set_user_attr("error", outcome.error)
        study.tell(trial, state=TrialState.FAIL)


def _worker(settings, study, command, device, lock_path, progress, stop_event):
    while not stop_event.is_set():
        claimed = sweep_study.claim_next(study, lock_path)
        if claimed is None and sweep_study.recover_abandoned(study, lock_path):
            claimed = sweep_study.claim_next(study, lock_path)
        if claimed is None:
            return
        trial = Trial.from_study(claimed.user_attrs, settings.sweep_dir, status="running")
        argv = _trial_argv(settings, command, trial)
        process = TrialProcess(argv, trial.output_dir, command.metric, device, stop_event)
        with sweep_study.heartbeat(study, claimed):
            outcome = process.run(claimed)
        _finish(study, claimed, outcome)
        if settings.keep_checkpoints == "none" and outcome.status in ("complete", "pruned"):
            freed = results.delete_training_checkpoints(trial.output_dir)
            logging.info("Deleted %s's training checkpoints (%.0f MB).", trial.key, freed / 1e6)
        if outcome.status != "interrupted":
            progress.ended(trial.key, outcome)
        if progress.failing_alike():
            stop_event.set()


def write_report(study, sweep_dir, metric, wanted_keys):
    """Writes sweep_results.json, summary.tsv, expected_max.tsv, the plots and best/; returns
    (the `Trial`s, the best one or None, the printed table)."""
    rows = results.collect(study, sweep_dir, metric, wanted_keys)
    best = results.best_trial(rows)
    results.write_results(sweep_dir, metric, rows, best)
    table_rows = report.summarize(rows)
    report.write_summary_tsv(os.path.join(sweep_dir, "summary.tsv"), table_rows)
    curves, spread = report.expected_max_curves(rows), report.expected_max_spread(rows)
    report.write_expected_max_tsv(os.path.join(sweep_dir, "expected_max.tsv"), curves, spread)
    plots.plot_expected_max(
        os.path.join(sweep_dir, "expected_max.png"), curves, metric, spread=spread
    )
    plots.plot_scores(os.path.join(sweep_dir, "scores.png"), rows, metric)
    results.copy_best(sweep_dir, best)
    return rows, best, report.format_summary(table_rows, metric)


def run_sweep(settings, runner_argv, project_root):
    """Runs every trial of the sweep not yet finished, then writes the report.

    Returns:
        The sweep's `Trial`s with their outcomes (`results.collect`) and the best one, or None.
    """
    command, grid_flags, wanted = plan(settings, runner_argv, project_root)
    os.makedirs(settings.sweep_dir, exist_ok=True)
    storage = settings.storage or sweep_study.default_storage(settings.sweep_dir)
    lock_path = (
        os.path.join(settings.sweep_dir, ".claims.lock") if storage.startswith("sqlite") else None
    )
    study = sweep_study.open_study(
        storage,
        settings.study_name,
        sweep_study.make_pruner(settings.prune, settings.pruner),
        {"argv": [os.path.basename(command.script), *command.args], "grid_flags": grid_flags},
    )
    added = sweep_study.enqueue_missing(study, wanted, lock_path)
    sweep_study.recover_abandoned(study, lock_path)
    devices = _devices(settings.devices)
    logging.info(
        "Sweep of %d trials in %s (%d new), metric %s, %d at a time.",
        len(wanted),
        settings.sweep_dir,
        added,
        command.metric,
        len(devices),
    )
    finished = sweep_study.finished_keys(study)
    progress = _Progress(len(wanted), sum(w.key in finished for w in wanted), len(devices))
    stop_event = threading.Event()
    previous = {
        s: signal.signal(s, lambda *_: stop_event.set()) for s in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        threads = [
            threading.Thread(
                target=_worker,
                args=(settings, study, command, d, lock_path, progress, stop_event),
                daemon=True,
            )
            for d in devices
        ]
        for thread in threads:
            thread.start()
            time.sleep(0.1)
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(0.5)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    keys = [w.key for w in wanted]
    rows, best, table = write_report(study, settings.sweep_dir, command.metric, keys)
    print(table, flush=True)
    alike = progress.failing_alike()
    if alike:
        raise UserError(
            f"The first trials all failed alike, so the sweep stopped: {alike} Fix the runner's "
            "command line after `--` and run the same sweep again."
        )
    if stop_event.is_set():
        raise UserError(
            f"The sweep in {settings.sweep_dir} was stopped; run the same command again to "
            "resume it (finished trials are kept, the interrupted ones resume)."
        )
    if best is None and progress.errors:
        raise UserError(
            f"No trial of the sweep in {settings.sweep_dir} completed; the last failure: "
            f"{progress.errors[-1]} (each trial's trial.log has its output)."
        )
    if best is not None:
        logging.info(
            "Best: %s with %s = %.4f; its outputs are in %s.",
            best.key,
            command.metric,
            best.dev_metric,
            os.path.join(settings.sweep_dir, "best"),
        )
    return rows, best
