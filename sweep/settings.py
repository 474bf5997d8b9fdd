"""The settings of a sweep: run_sweep.py's flags, each default defined here once."""

import dataclasses
import sys


@dataclasses.dataclass
class SweepSettings:
    """What run_sweep.py runs (see its flags for each field's meaning).

    Attributes:
        sweep_dir: folder of the trials, the database (SQLite) and the report.
        grid: `--grid` values, each `flag=v1,v2,...`.
        restarts: trials per setting, with seeds base + 0, 1, ...
        vary: which seed a restart changes: "all", "init" or "data".
        devices: comma-separated GPU indices, one trial on each at once; "" for one at a time.
        storage: an Optuna storage URL; None for SQLite in sweep_dir.
        study_name: the sweep's name in the storage.
        prune: stop trials that fall behind on dev.
        pruner: "median" or "halving".
        keep_checkpoints: a trial's training checkpoints: "last" (only the newest, the
            runner's --keep_checkpoint_max=1 unless its command sets one), "none" (deleted once
            the trial is complete or pruned; its best_checkpoint/ and results stay) or
            "runner" (as the runner's --keep_checkpoint_max says).
        python: the interpreter the runners are started with.
    """

    sweep_dir: str
    grid: list = dataclasses.field(default_factory=list)
    restarts: int = 1
    vary: str = "all"
    devices: str = ""
    storage: str | None = None
    study_name: str = "sweep"
    prune: bool = False
    pruner: str = "median"
    keep_checkpoints: str = "last"
    python: str = sys.executable
