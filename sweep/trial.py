"""`Trial`: one trial of a sweep, the one type the sweep's parts pass each other."""

import dataclasses
import os

STATUSES = ("complete", "pruned", "failed", "running", "waiting")
# What the Optuna study keeps of a trial (its user attributes), in this order: enough to run it
# again in any process, and what a sweep's database has held since its first version.
STORED = ("key", "settings", "restart", "seed")


def trial_dir(sweep_dir, key):
    """The trial's folder, its runner's --output_dir: `<sweep_dir>/trials/<key>`."""
    return os.path.join(sweep_dir, "trials", key)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Trial:
    """One trial of a sweep: a setting of the grid and a restart, run by its runner once.

    A trial is planned with its identity only (status "waiting"), claimed from the study
    ("running"), and read back from the study with its outcome for the report. The fields are in
    the order of the keys of each trial of `sweep_results.json` and `best/trial.json`
    (`as_json`), which earlier sweeps' folders hold too.

    Attributes:
        key: the folder under `<sweep_dir>/trials/`, `<flag=value,...>/restart_<r>`
            (`grid.trial_name`); what names the trial in the study.
        settings: {flag: value} of the grid, in the grid's order, values as typed on the
            command line; {} for the runner's defaults.
        restart: which random restart of its setting, 0, 1, ...
        seed: {seed flag: value} the restart sets, e.g. {"seed": 12346}.
        output_dir: the trial's folder (`trial_dir`), its runner's --output_dir.
        status: one of `STATUSES`.
        dev_metric: the task's official dev metric, higher is better; complete trials only.
        last_reported: the last dev score reported during training (`--eval_every_steps`),
            e.g. where a pruned trial stopped; None if none was.
        degenerate: a complete trial that learnt nothing the dev metric sees (e.g. one class
            predicted for every example, an MCC <= 0; `results.is_degenerate`).
        step: the last step evaluated on dev, if any.
        error: a failed trial's reason (its runner's last line).
        wall_s: seconds its runner's process ran, if it ended.

    Raises:
        ValueError: a status that is not one of `STATUSES`.
    """

    key: str
    settings: dict[str, str]
    restart: int
    seed: dict[str, int]
    output_dir: str
    status: str = "waiting"
    dev_metric: float | None = None
    last_reported: float | None = None
    degenerate: bool = False
    step: int | None = None
    error: str | None = None
    wall_s: float | None = None

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(
                f"Trial {self.key} (restart {self.restart}) has status {self.status!r}; expected "
                f"one of {', '.join(STATUSES)}."
            )

    @classmethod
    def from_study(cls, attrs, sweep_dir, **outcome):
        """The trial an Optuna trial's user attributes name (see `STORED`).

        Args:
            attrs: the Optuna trial's `user_attrs`.
            sweep_dir: --sweep_dir, where the trial's folder is.
            **outcome: the fields after `output_dir` (status, dev_metric, ...).
        """
        fields = {name: attrs[name] for name in STORED}
        return cls(**fields, output_dir=trial_dir(sweep_dir, attrs["key"]), **outcome)

    def study_attrs(self):
        """What the study keeps of the trial: {name: value} of `STORED`, in that order."""
        return {name: getattr(self, name) for name in STORED}

    def as_json(self):
        """The trial as a dict of every field, in order: one trial of `sweep_results.json`."""
        return dataclasses.asdict(self)
