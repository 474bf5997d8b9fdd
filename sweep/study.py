"""The sweep's bookkeeping in an Optuna study: which trials exist, who runs which, what finished.

Optuna keeps the trials in a database: SQLite in `--sweep_dir` on one machine, or a PostgreSQL
or MySQL server shared by the processes of several machines (`--storage`). Each trial of the
grid is enqueued once as a WAITING Optuna trial whose user attributes name its `Trial`
(`sweep.trial.STORED`: key, settings, restart, seed); a process claims a waiting trial by
moving it to RUNNING, which the database grants to one claimant only, so processes never run
the same trial. Optuna's pruners decide from the dev scores each trial reports.

A process that dies leaves its trial RUNNING. Such a trial is failed, then enqueued again (its
run resumes from its checkpoints), when either its heartbeat is older than the grace period
(any machine) or the process that claimed it no longer exists on this machine (at once).
"""

import contextlib
import fcntl
import os
import socket
import threading
import warnings

import optuna
from optuna.exceptions import StorageInternalError
from optuna.trial import TrialState
from sqlalchemy.exc import SQLAlchemyError

from fileio.errors import UserError
from sweep.trial import STORED

HEARTBEAT_S = 20
GRACE_S = 90
LIVE = (TrialState.WAITING, TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED)


def default_storage(sweep_dir):
    """The SQLite database of a sweep on one machine."""
    return "sqlite:///" + os.path.abspath(os.path.join(sweep_dir, "sweep.db"))


def make_pruner(prune, pruner):
    """Optuna's pruner for `--prune` / `--pruner` (`median` or `halving`)."""
    if not prune:
        return optuna.pruners.NopPruner()
    if pruner == "median":
        # Compares each trial with the trials finished before it; two are enough to start.
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0)
    if pruner == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    raise UserError(f"--pruner={pruner}: use median or halving.")


def open_study(storage, study_name, pruner, command_line):
    """Opens (or creates) the study and checks it is a sweep of the same runner command.

    Args:
        storage: a database URL.
        study_name: --study_name.
        pruner: from `make_pruner`.
        command_line: the runner command and grid keys, stored on first use; a later run
            with another command is refused, since its trials would mix with these.

    Raises:
        UserError: the database cannot be opened, or holds a sweep of another command.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Heartbeats are marked experimental since Optuna 2.9 and unchanged since; the sweep
    # pins the version it was tested with, so the warning tells the user nothing.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    try:
        rdb = optuna.storages.RDBStorage(
            storage, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S
        )
        study = optuna.create_study(
            storage=rdb,
            study_name=study_name,
            direction="maximize",
            pruner=pruner,
            load_if_exists=True,
        )
    except (ImportError, ValueError, StorageInternalError, SQLAlchemyError) as err:
        raise UserError(
            f"--storage={storage}: could not open the sweep's database ({err}); check the "
            "URL and, for a server, that it is reachable and its driver installed."
        ) from None
    stored = study.user_attrs.get("command")
    if stored is None:
        study.set_user_attr("command", command_line)
    elif stored != command_line:
        raise UserError(
            f"Study {study_name!r} in {storage} is a sweep of another command "
            f"({' '.join(stored['argv'])}, grid {', '.join(stored['grid_flags'])}); a widened "
            "grid may add values, not flags or arguments: use a new --sweep_dir or --study_name."
        )
    return study


@contextlib.contextmanager
def queue_lock(lock_path):
    # SQLite reads a trial's state outside the write lock, so two processes could both move
    # the same WAITING trial to RUNNING; a file lock beside the database serialises claims.
    # Server databases lock the row themselves.
    if lock_path is None:
        yield
        return
    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def finished_keys(study):
    """The keys of the trials that completed or were pruned."""
    done = (TrialState.COMPLETE, TrialState.PRUNED)
    return {t.user_attrs.get("key") for t in study.get_trials(deepcopy=False, states=done)}


def enqueue_missing(study, wanted, lock_path=None):
    """Enqueues each wanted trial that has no waiting, running or finished trial yet.

    A trial that failed in an earlier run of the sweep is enqueued again here (its folder keeps
    its checkpoints, so it resumes).

    Args:
        wanted: the grid's `Trial`s in run order.

    Returns:
        How many were enqueued.
    """
    present = {t.user_attrs.get("key") for t in study.get_trials(deepcopy=False, states=LIVE)}
    added = 0
    for trial in wanted:
        if trial.key not in present:
            study.enqueue_trial({}, user_attrs=trial.study_attrs())
            added += 1
    return added


def _process_gone(attrs):
    if attrs.get("host") != socket.gethostname() or not attrs.get("pid"):
        return False
    try:
        os.kill(int(attrs["pid"]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def recover_abandoned(study, lock_path=None):
    """Fails the RUNNING trials whose process is gone and enqueues them again.

    Returns:
        The keys of the trials put back in the queue.
    """
    with queue_lock(lock_path):
        return _recover(study)


def _recover(study):
    storage = study._storage
    optuna.storages.fail_stale_trials(study)  # heartbeats older than the grace period
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if _process_gone(trial.user_attrs):
            with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
                storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    requeued = []
    trials = study.get_trials(deepcopy=False)
    live = {t.user_attrs.get("key") for t in trials if t.state in LIVE}
    for trial in trials:
        key = trial.user_attrs.get("key")
        if trial.state == TrialState.FAIL and key not in live and "error" not in trial.user_attrs:
            attrs = {k: trial.user_attrs[k] for k in STORED}
            study.enqueue_trial({}, user_attrs=attrs)
            live.add(key)
            requeued.append(key)
    return requeued


def claim_next(study, lock_path=None):
    """Claims the first waiting trial for this process.

    Returns:
        An Optuna `Trial` (RUNNING, with `host`, `pid` set), or None when none is waiting.
    """
    storage = study._storage
    with queue_lock(lock_path):
        for frozen in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            try:
                if not storage.set_trial_state_values(frozen._trial_id, TrialState.RUNNING):
                    continue
            except optuna.exceptions.UpdateFinishedTrialError:
                continue
            trial = optuna.trial.Trial(study, frozen._trial_id)
            trial.set_user_attr("host", socket.gethostname())
            trial.set_user_attr("pid", os.getpid())
            if _taken_by_another(study, frozen):
                trial.set_user_attr("error", "duplicate of another trial of the same settings")
                study.tell(trial, state=TrialState.FAIL)
                continue
            return trial
    return None


def _taken_by_another(study, claimed):
    # Without a shared lock (server databases), two processes may enqueue the same trial; of
    # two attempts running at once the older one goes on, and a finished one is never rerun.
    key = claimed.user_attrs.get("key")
    for other in study.get_trials(deepcopy=False):
        if other.number == claimed.number or other.user_attrs.get("key") != key:
            continue
        if other.state in (TrialState.COMPLETE, TrialState.PRUNED):
            return True
        if other.state == TrialState.RUNNING and other.number < claimed.number:
            return True
    return False


@contextlib.contextmanager
def heartbeat(study, trial):
    """Records the trial's heartbeat every HEARTBEAT_S seconds while the block runs."""
    storage = study._storage
    stop = threading.Event()

    def beat():
        while True:
            with contextlib.suppress(Exception):
                storage.record_heartbeat(trial._trial_id)
            if stop.wait(HEARTBEAT_S):
                return

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
