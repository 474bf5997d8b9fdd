"""What a sweep runs: the runner's command line, the grid of settings and each trial's folder.

A sweep is a grid (`--grid=learning_rate=5e-5,3e-5 --grid=num_train_epochs=2,3`) times
`--restarts` seeds, over the command line of one fine-tuning runner. Everything here is checked
before any trial starts, so a misspelt flag fails in a second rather than after the first
trial. TensorFlow-free.
"""

import dataclasses
import difflib
import itertools
import os
import subprocess
import sys
import urllib.parse
import xml.etree.ElementTree as ElementTree

from data.dev_metrics import official_metric
from data.glue.processors import canonical_task_name
from fileio.errors import UserError
from fileio.flags_file import recorded_command

# Runner script -> the dev_metrics runner name.
RUNNERS = {"run_classifier.py": "classifier", "run_squad.py": "squad", "run_ner.py": "ner"}
# A distillation's student is a run of its teacher's runner (named by the teacher's flags.txt),
# with the teacher's flags under its own.
DISTILL = "run_distill.py"

# Flags the sweep sets itself on every trial.
SWEEP_OWNED = ("output_dir",)
SEED_FLAGS = {"all": "seed", "init": "init_seed", "data": "data_seed"}


@dataclasses.dataclass(frozen=True)
class RunnerCommand:
    """The runner's own command line, as given after `--`.

    Attributes:
        script: path of the runner script.
        runner: "classifier", "squad" or "ner".
        args: its arguments, without --output_dir.
        metric: the eval_results.txt key of the task's official dev metric.
    """

    script: str
    runner: str
    args: tuple
    metric: str

    def flag_value(self, name):
        """The value given for `--name` (the last one, as absl reads it), or None."""
        value = None
        args = list(self.args)
        for i, arg in enumerate(args):
            if arg == f"--{name}" and i + 1 < len(args) and not args[i + 1].startswith("--"):
                value = args[i + 1]
            elif arg.startswith(f"--{name}="):
                value = arg.split("=", 1)[1]
        return value

    def is_true(self, name):
        """True if the command line turns the bool flag `--name` on (the last mention wins)."""
        state = False
        for arg in self.args:
            if arg == f"--{name}":
                state = True
            elif arg == f"--no{name}":
                state = False
            elif arg.startswith(f"--{name}="):
                state = arg.split("=", 1)[1].lower() in ("true", "t", "1", "yes", "y")
        return state

    def gives(self, name):
        """True if the command line sets `--name` (also as `--noname` for a bool)."""
        return any(
            arg in (f"--{name}", f"--no{name}") or arg.startswith(f"--{name}=") for arg in self.args
        )


def parse_grid(entries):
    """Parses `--grid` values, each `flag=v1,v2,...`, into {flag: [values]} in the given order.

    Values stay the strings the user typed, so a trial passes exactly them to the runner.

    Raises:
        UserError: a value without `=`, an empty list, a repeated value or flag.
    """
    grid = {}
    for entry in entries or ():
        name, sep, values = entry.partition("=")
        name = name.strip().lstrip("-")
        choices = [v.strip() for v in values.split(",")] if sep else []
        if not name or not choices or any(not v for v in choices):
            raise UserError(
                f"--grid={entry} is not flag=value1,value2,...; e.g. "
                "--grid=learning_rate=5e-5,3e-5,2e-5."
            )
        if name in grid:
            raise UserError(
                f"--grid names {name} twice; give all its values in one --grid={name}=..."
            )
        if len(set(choices)) != len(choices):
            raise UserError(f"--grid={entry} repeats a value; give each value once.")
        grid[name] = choices
    return grid


def grid_settings(grid):
    """Every combination of the grid's values, as {flag: value} dicts, first flag slowest."""
    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*grid.values())]


def trial_name(settings, restart):
    """The trial's folder under `<sweep_dir>/trials/`: `<flag=value,...>/restart_<r>`.

    Readable in a file browser, and a value holding `/` or other odd characters is quoted so
    it stays one folder.
    """
    part = ",".join(f"{k}={urllib.parse.quote(str(v), safe='+-.e')}" for k, v in settings.items())
    return f"{part or 'default'}/restart_{restart}"


def _find_script(script, project_root):
    for candidate in (script, os.path.join(project_root, script)):
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return None


def parse_runner_command(argv, project_root):
    """Checks the runner command line given after `--` and returns its `RunnerCommand`.

    Args:
        argv: e.g. ["run_classifier.py", "--task_name=MRPC", ...]; a leading `python` is
            allowed.
        project_root: where the runners are, for a bare script name.

    Raises:
        UserError: no command, a runner that is not a fine-tuning runner, --output_dir given,
            or no dev evaluation in it.
    """
    argv = list(argv)
    if argv and os.path.basename(argv[0]).startswith("python"):
        argv = argv[1:]
    if not argv:
        raise UserError(
            "No runner command after `--`: end the command line with e.g. "
            "`-- run_classifier.py --task_name=MRPC --do_train=true --do_eval=true ...`."
        )
    script, args = argv[0], tuple(argv[1:])
    name = os.path.basename(script)
    if name not in RUNNERS and name != DISTILL:
        raise UserError(
            f"The command after `--` runs {script}; a sweep runs one of "
            f"{', '.join(RUNNERS)} or {DISTILL}: put that runner's own command line after `--`."
        )
    path = _find_script(script, project_root)
    if path is None:
        raise UserError(f"{script} (after `--`) was not found; give the runner's path.")
    checked = args
    if name == DISTILL:
        name, checked = _with_teacher(args)
    runner = RUNNERS[name]
    partial = RunnerCommand(path, runner, checked, "")
    for owned in SWEEP_OWNED:
        if RunnerCommand(path, runner, args, "").gives(owned):
            raise UserError(
                f"The runner's command gives --{owned}; the sweep gives each trial its own "
                f"folder under --sweep_dir: remove --{owned} after `--`."
            )
    for needed in ("do_train", "do_eval"):
        if not partial.is_true(needed):
            raise UserError(
                f"The runner's command needs --{needed}=true: each trial trains and is ranked "
                "by its dev score."
            )
    task = partial.flag_value("task_name")
    own_data = runner == "classifier" and _own_data_problem(partial)
    if runner == "classifier" and task is None and not own_data:
        raise UserError(f"{name} needs --task_name after `--` (e.g. --task_name=MRPC).")
    try:
        metric = official_metric(runner, task, own_data)
    except ValueError as err:
        raise UserError(f"--task_name={task} after `--`: {err}") from None
    return RunnerCommand(path, runner, args, metric)


def _with_teacher(args):
    """(the teacher's runner script, the arguments a run_distill.py command amounts to: the
    teacher's recorded flags, then --do_train, then its own)."""
    teacher_dir = RunnerCommand("", "", args, "").flag_value("teacher_dir")
    if not teacher_dir:
        raise UserError(
            f"{DISTILL} after `--` needs --teacher_dir: the --output_dir of the teacher's run."
        )
    script, recorded = recorded_command(teacher_dir)
    if script not in RUNNERS:
        raise UserError(
            f"--teacher_dir={teacher_dir} after `--` holds no flags.txt of "
            f"{', '.join(RUNNERS)}: pass the --output_dir of such a training run."
        )
    return script, (*recorded, "--do_train=true", *args)


def _own_data_problem(partial):
    """The problem type of a run_classifier command on the user's own data (files or a
    --processor), or None for a GLUE task: --problem_type, else multi-label for
    --label_columns, else single-label (a JSON-list label column needs --problem_type)."""
    given = partial.flag_value("problem_type")
    if given and given != "auto":
        return given
    own_flags = ("processor", "train_file", "dev_file", "label_column", "label_columns")
    task = partial.flag_value("task_name")
    if task is not None and canonical_task_name(task) is not None:
        return None
    if task is None and not any(partial.flag_value(f) is not None for f in own_flags):
        return None
    return "multi_label" if partial.flag_value("label_columns") else "single_label"


def restart_seeds(command, vary, restarts, known_flags):
    """The seed flag each restart sets and its values: restart r gets base + r.

    The base is the command's own value of that flag, else its --seed, else the runner's
    default, so restart 0 is the run the command would make alone.

    Returns:
        (flag name, [seed of restart 0, 1, ...]).
    """
    flag = SEED_FLAGS[vary]
    base = (
        command.flag_value(flag)
        or command.flag_value("seed")
        or known_flags.get("seed", {}).get("default")
    )
    try:
        base = int(base)
    except (TypeError, ValueError):
        raise UserError(f"--{flag}={base} after `--` is not an integer seed.") from None
    return flag, [base + r for r in range(restarts)]


def runner_flags(command, python=sys.executable):
    """{name: {"default", "type", "choices"}} of every flag the runner defines, from its own
    `--helpxml` (which loads no TensorFlow); values are absl's text."""
    # run_distill.py defines its teacher's runner's flags, named by --teacher_dir.
    teacher = command.flag_value("teacher_dir")
    result = subprocess.run(
        [python, command.script, *([f"--teacher_dir={teacher}"] if teacher else []), "--helpxml"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        root = ElementTree.fromstring(result.stdout)
    except ElementTree.ParseError:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(
            f"Could not list the flags of {command.script} ({last}); check that it runs: "
            f"python {command.script} --help."
        ) from None
    return {
        flag.findtext("name"): {
            "default": flag.findtext("default"),
            "type": flag.findtext("type"),
            "choices": [e.text for e in flag.findall("enum_value")],
        }
        for flag in root.iter("flag")
    }


_BOOLS = ("true", "false", "t", "f", "1", "0", "yes", "no")


def _value_problem(value, spec):
    kind = spec["type"] or ""
    try:
        if kind == "float":
            float(value)
        elif kind == "int":
            int(value)
    except ValueError:
        return f"not a{'n' if kind == 'int' else ''} {kind}"
    if kind == "bool" and value.lower() not in _BOOLS:
        return "not true or false"
    if spec["choices"] and value not in spec["choices"]:
        return f"not one of {', '.join(spec['choices'])}"
    return None


def check_grid(grid, command, restarts, vary, known_flags):
    """Refuses a grid the runner cannot run, before any trial starts.

    Args:
        grid: from `parse_grid`.
        command: `RunnerCommand`.
        restarts: --restarts.
        vary: which seed restarts change, a key of `SEED_FLAGS`.
        known_flags: `runner_flags(command)`.

    Raises:
        UserError: naming the grid flag and the fix.
    """
    name = os.path.basename(command.script)
    for flag in grid:
        if flag not in known_flags:
            close = difflib.get_close_matches(flag, list(known_flags), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise UserError(f"--grid={flag}=...: {name} has no flag --{flag}{hint}.")
        if flag in SWEEP_OWNED:
            raise UserError(f"--grid={flag}=...: the sweep sets --{flag} of each trial itself.")
        for value in grid[flag]:
            problem = _value_problem(value, known_flags[flag])
            if problem:
                raise UserError(f"--grid={flag}=...: {value} is {problem}.")
        if command.gives(flag):
            raise UserError(
                f"--{flag} is both in --grid and in the runner's command after `--`: "
                "remove it from one of them."
            )
    seed_flag = SEED_FLAGS[vary]
    if seed_flag not in known_flags:
        raise UserError(f"--vary={vary}: {name} has no flag --{seed_flag} to vary.")
    if restarts > 1 and (seed_flag in grid):
        raise UserError(
            f"--grid sets --{seed_flag} and --restarts={restarts} varies it: use one of them."
        )
