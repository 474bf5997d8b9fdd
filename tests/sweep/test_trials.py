"""The sweep's parts without TensorFlow: the grid, the Optuna bookkeeping and a trial's process.

A trial's process here is a stand-in script that writes eval_history.jsonl as the runners do,
so a lagging dev score can be made to order; the runners themselves run in
tests/runners/test_run_sweep.py.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading

import optuna
import pytest

from data.dev_metrics import read_eval_history
from fileio.errors import UserError
from sweep import grid, results, study
from sweep.trial import Trial
from sweep.trial_process import TrialProcess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _command(*args):
    return grid.parse_runner_command(
        ["run_classifier.py", "--task_name=CoLA", "--do_train=true", "--do_eval", *args], REPO
    )


def test_grid_settings_and_trial_names():
    parsed = grid.parse_grid(["learning_rate=5e-5,3e-5", "--num_train_epochs=2,3,4"])
    assert parsed == {"learning_rate": ["5e-5", "3e-5"], "num_train_epochs": ["2", "3", "4"]}
    settings = grid.grid_settings(parsed)
    assert len(settings) == 6 and settings[1] == {"learning_rate": "5e-5", "num_train_epochs": "3"}
    names = {grid.trial_name(s, r) for s in settings for r in range(2)}
    assert len(names) == 12
    assert grid.trial_name(settings[0], 1) == "learning_rate=5e-5,num_train_epochs=2/restart_1"
    # A value with a slash stays one folder.
    assert grid.trial_name({"init_checkpoint": "/a/b"}, 0).count("/") == 1
    for bad in (["learning_rate"], ["learning_rate="], ["lr=1,,2"], ["a=1", "a=2"], ["a=1,1"]):
        with pytest.raises(UserError, match="--grid"):
            grid.parse_grid(bad)


def test_runner_command_checks():
    command = _command("--seed=7")
    assert command.runner == "classifier" and command.metric == "eval_mcc"
    known = grid.runner_flags(command)
    assert {"learning_rate", "init_seed", "data_seed", "num_train_epochs"} <= set(known)
    assert grid.restart_seeds(command, "all", 3, known) == ("seed", [7, 8, 9])
    assert grid.restart_seeds(_command(), "data", 2, known) == ("data_seed", [12345, 12346])
    with pytest.raises(UserError, match="no flag --learnin_rate.*learning_rate"):
        grid.check_grid({"learnin_rate": ["1"]}, command, 1, "all", known)
    with pytest.raises(UserError, match="both in --grid"):
        grid.check_grid({"seed": ["1"]}, command, 1, "all", known)
    with pytest.raises(UserError, match="remove --output_dir"):
        _command("--output_dir=/tmp/x")
    with pytest.raises(UserError, match="run_classifier.py, run_squad.py, run_ner.py"):
        grid.parse_runner_command(["run_pretraining.py", "--do_train"], REPO)
    with pytest.raises(UserError, match="--do_eval=true"):
        grid.parse_runner_command(["run_ner.py", "--do_train"], REPO)
    assert grid.parse_runner_command(
        [sys.executable, "run_squad.py", "--do_train", "--do_eval=true"], REPO
    ).metric == ("f1")


def test_own_data_commands_are_ranked_by_their_problem_types_metric():
    def metric(*args):
        return grid.parse_runner_command(
            ["run_classifier.py", "--do_train", "--do_eval", *args], REPO
        ).metric

    assert metric("--train_file=t.csv", "--dev_file=d.csv") == "eval_accuracy"
    assert metric("--task_name=tickets", "--data_dir=x") == "eval_accuracy"
    assert metric("--train_file=t.csv", "--problem_type=multi_label") == "eval_micro_f1"
    assert metric("--train_file=t.csv", "--label_columns=a,b") == "eval_micro_f1"
    assert metric("--processor=p.py:P", "--problem_type=regression") == "eval_spearman"
    assert metric("--task_name=MRPC", "--problem_type=multi_label") == "eval_f1"
    with pytest.raises(UserError, match="needs --task_name"):
        metric()


def _stand_in(tmp_path, values, sleep_s=0.0):
    """A runner stand-in: writes one history line per value, then eval_results.txt."""
    script = tmp_path / "stand_in.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, os, signal, sys, time
            out = sys.argv[1]
            def stop(*_):
                open(os.path.join(out, "got_sigterm"), "w").close()
                sys.exit(0)
            signal.signal(signal.SIGTERM, stop)
            with open(os.path.join(out, "eval_history.jsonl"), "a") as f:
                for step, value in enumerate({values!r}, 1):
                    f.write(json.dumps({{"step": step * 10, "metric": "eval_accuracy",
                                         "value": value, "results": {{}}}}) + "\\n")
                    f.flush()
                    time.sleep({sleep_s})
            with open(os.path.join(out, "eval_results.txt"), "w") as f:
                f.write("eval_accuracy = %r\\n" % {values!r}[-1])
            """
        )
    )
    return script


def _study(tmp_path, pruner):
    return optuna.create_study(
        storage=study.default_storage(tmp_path),
        direction="maximize",
        pruner=pruner,
    )


@pytest.mark.slow
def test_a_lagging_trial_is_pruned_and_stopped(tmp_path):
    sweep = _study(tmp_path, study.make_pruner(True, "median"))
    outcomes = []
    for name, values in (("a", [0.6, 0.7, 0.8]), ("b", [0.5, 0.8, 0.9])):
        out = tmp_path / name
        script = _stand_in(tmp_path, values)
        trial = sweep.ask()
        outcome = TrialProcess(
            [sys.executable, str(script), str(out)], str(out), "eval_accuracy"
        ).run(trial)
        sweep.tell(trial, outcome.dev_metric)
        outcomes.append(outcome)
    assert [o.status for o in outcomes] == ["complete", "complete"]
    assert [o.dev_metric for o in outcomes] == [0.8, 0.9]
    # The third trial lags from its first evaluation on, and would go on for a minute.
    out = tmp_path / "c"
    script = _stand_in(tmp_path, [0.1] * 60, sleep_s=1.0)
    trial = sweep.ask()
    outcome = TrialProcess([sys.executable, str(script), str(out)], str(out), "eval_accuracy").run(
        trial
    )
    assert outcome.status == "pruned" and outcome.step <= 30 and outcome.dev_metric == 0.1
    assert (out / "got_sigterm").exists()
    assert len(read_eval_history(str(out))) < 5
    # Without --prune the same lagging trial runs to its end.
    (tmp_path / "noprune").mkdir()
    sweep = _study(tmp_path / "noprune", study.make_pruner(False, "median"))
    out = tmp_path / "d"
    script = _stand_in(tmp_path, [0.1, 0.2])
    outcome = TrialProcess([sys.executable, str(script), str(out)], str(out), "eval_accuracy").run(
        sweep.ask()
    )
    assert outcome.status == "complete" and outcome.dev_metric == 0.2


def test_a_failing_trial_reports_its_last_line(tmp_path):
    sweep = _study(tmp_path, study.make_pruner(False, "median"))
    script = tmp_path / "fail.py"
    script.write_text("import sys\nprint('working')\nsys.exit('run_x.py: error: bad flag --y')\n")
    out = tmp_path / "out"
    outcome = TrialProcess([sys.executable, str(script)], str(out), "eval_accuracy").run(
        sweep.ask()
    )
    assert outcome.status == "failed" and outcome.error == "run_x.py: error: bad flag --y"


def test_eval_history_reader_ignores_a_partial_line(tmp_path):
    lines = [{"step": 10, "value": 0.5}, {"step": 20, "value": 0.6}, {"step": 10, "value": 0.7}]
    text = "".join(json.dumps(line) + "\n" for line in lines) + '{"step": 30, "val'
    (tmp_path / "eval_history.jsonl").write_text(text)
    assert read_eval_history(str(tmp_path)) == [
        {"step": 10, "value": 0.7},
        {"step": 20, "value": 0.6},
    ]


def _wanted(n):
    return [
        Trial(
            key=f"k{i}/restart_0",
            settings={"k": str(i)},
            restart=0,
            seed={"seed": i},
            output_dir=f"k{i}/restart_0",
        )
        for i in range(n)
    ]


def _claim_all(storage, lock_path, claimed):
    sweep = optuna.load_study(study_name="s", storage=storage)
    while (trial := study.claim_next(sweep, lock_path)) is not None:
        claimed.append(trial.user_attrs["key"])
        sweep.tell(trial, 1.0)


def test_processes_claim_disjoint_trials_and_requeue_the_abandoned(tmp_path):
    storage = study.default_storage(tmp_path)
    lock = str(tmp_path / ".claims.lock")
    sweep = study.open_study(
        storage, "s", study.make_pruner(False, "median"), {"argv": ["x"], "grid_flags": []}
    )
    wanted = _wanted(12)
    assert study.enqueue_missing(sweep, wanted, lock) == 12
    # Enqueuing again adds nothing; a widened grid adds only its new trials.
    assert study.enqueue_missing(sweep, wanted, lock) == 0
    assert study.enqueue_missing(sweep, _wanted(14), lock) == 2
    # Threads claiming at once, each with its own connection: every trial runs once.
    claimed = []
    threads = [threading.Thread(target=_claim_all, args=(storage, lock, claimed)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(w.key for w in _wanted(14))
    # A trial left RUNNING by a process that is gone is failed and enqueued again.
    study.enqueue_missing(sweep, _wanted(15), lock)
    trial = study.claim_next(sweep, lock)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], text=True, capture_output=True
    ).stdout
    trial.set_user_attr("pid", int(gone))
    assert study.recover_abandoned(sweep, lock) == ["k14/restart_0"]
    again = study.claim_next(sweep, lock)
    assert again.user_attrs["key"] == "k14/restart_0" and again.number != trial.number
    # A study of another command is refused.
    with pytest.raises(UserError, match="another command"):
        study.open_study(
            storage, "s", study.make_pruner(False, "median"), {"argv": ["y"], "grid_flags": []}
        )


@pytest.mark.parametrize(
    "metric,value,history,expected",
    [
        ("eval_mcc", 0.0, [], True),
        ("eval_mcc", 0.2, [], False),
        ("eval_spearman", float("nan"), [], True),
        ("f1", 0.0, [], True),
        ("eval_accuracy", 0.7, [{"predicted_classes": {"0": 0, "1": 16}}], True),
        ("eval_accuracy", 0.7, [{"predicted_classes": {"0": 3, "1": 13}}], False),
        ("eval_f1", 0.0, [], True),
    ],
)
def test_degenerate_runs(metric, value, history, expected):
    assert results.is_degenerate(metric, value, history) is expected


def test_the_sweep_stops_when_its_first_trials_fail_alike():
    from jobs.sweep_run import _Progress
    from sweep.trial_process import Outcome

    progress = _Progress(total=6, done=0, workers=1)
    progress.ended("a", Outcome("failed", error="x: error: no such file"))
    assert progress.failing_alike() is None
    progress.ended("b", Outcome("failed", error="x: error: no such file"))
    assert progress.failing_alike() == "x: error: no such file"
    # Once a trial completed, failures are the trials' own: the sweep goes on.
    progress.ended("c", Outcome("complete", 0.5))
    assert progress.failing_alike() is None
    other = _Progress(total=6, done=0, workers=1)
    other.ended("a", Outcome("failed", error="x: error: one"))
    other.ended("b", Outcome("failed", error="x: error: two"))
    assert other.failing_alike() is None


def test_the_results_files_keep_every_key_of_a_trial_in_order(tmp_path):
    """sweep_results.json and best/trial.json as earlier sweeps wrote them, so their folders
    still read: a trial is these keys, in this order, read back from the study."""
    sweep = study.open_study(
        study.default_storage(tmp_path),
        "s",
        study.make_pruner(False, "median"),
        {"argv": ["x"], "grid_flags": ["learning_rate"]},
    )
    planned = [
        Trial(
            key=f"learning_rate={lr}/restart_0",
            settings={"learning_rate": lr},
            restart=0,
            seed={"seed": 12345},
            output_dir=str(tmp_path / "trials" / f"learning_rate={lr}" / "restart_0"),
        )
        for lr in ("5e-5", "3e-5")
    ]
    study.enqueue_missing(sweep, planned)
    claimed = study.claim_next(sweep)
    claimed.report(0.5, 10)
    claimed.set_user_attr("step", 20)
    claimed.set_user_attr("wall_s", 12.5)
    sweep.tell(claimed, 0.75)
    os.makedirs(planned[0].output_dir)
    rows = results.collect(sweep, str(tmp_path), "eval_accuracy", [t.key for t in planned])
    best = results.best_trial(rows)
    results.write_results(str(tmp_path), "eval_accuracy", rows, best)
    results.copy_best(str(tmp_path), best)
    earlier = [
        {
            "key": t.key,
            "settings": t.settings,
            "restart": 0,
            "seed": {"seed": 12345},
            "output_dir": t.output_dir,
            "status": status,
            "dev_metric": value,
            "last_reported": reported,
            "degenerate": False,
            "step": step,
            "error": None,
            "wall_s": wall,
        }
        for t, status, value, reported, step, wall in (
            (planned[0], "complete", 0.75, 0.5, 20, 12.5),
            (planned[1], "waiting", None, None, None, None),
        )
    ]
    written = (tmp_path / "sweep_results.json").read_text()
    assert (
        written
        == json.dumps({"metric": "eval_accuracy", "trials": earlier, "best": earlier[0]}, indent=2)
        + "\n"
    )
    assert (tmp_path / "best" / "trial.json").read_text() == json.dumps(earlier[0], indent=2) + "\n"
    # What the study keeps of a trial, as earlier sweeps' databases hold it.
    waiting = {k: earlier[1][k] for k in ("key", "settings", "restart", "seed")}
    assert sweep.get_trials()[1].user_attrs == waiting
