"""run_sweep.py end to end: a tiny model on tiny GLUE-format data, and MiniLM on real-format data.

The oracles: each trial's own eval_results.txt (the best trial is their argmax, the summary
their statistics by numpy), the trial folders' file times (finished trials are not rerun) and
the runner run alone (the best trial's files are what its command writes).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from data.dev_metrics import read_eval_results
from tests.helpers.glue_tasks import write_mrpc
from tests.helpers.scripts import REPO, run_in_repo, start_in_repo
from tests.helpers.tiny_config import write_tiny_config

GRID = ["--grid=learning_rate=1e-3,3e-3", "--grid=warmup_proportion=0.5"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mrpc")
    write_mrpc(folder, num_train=64, num_dev=16, num_test=8)
    write_tiny_config(folder / "bert_config.json", vocab_size=186)
    return folder


def _runner(data, *extra, drop=()):
    args = [
        "run_classifier.py",
        "--task_name=MRPC",
        f"--data_dir={data}",
        f"--vocab_file={os.path.join(REPO, 'tests/testdata/glue/vocab.txt')}",
        f"--bert_config_file={data / 'bert_config.json'}",
        "--max_seq_length=16",
        "--train_batch_size=4",
        "--eval_batch_size=8",
        "--predict_batch_size=8",
        "--num_train_epochs=1",
        "--save_checkpoints_steps=1",
        "--do_train",
        "--do_eval",
        "--do_predict",
        *extra,
    ]
    return [a for a in args if a.split("=")[0] not in drop]


def _sweep(sweep_dir, data, *flags, runner_extra=(), drop=()):
    return [
        sys.executable,
        os.path.join(REPO, "run_sweep.py"),
        f"--sweep_dir={sweep_dir}",
        *flags,
        "--",
        *_runner(data, *runner_extra, drop=drop),
    ]


def _trial_dirs(sweep_dir):
    root = sweep_dir / "trials"
    return sorted(p.parent for p in root.glob("*/restart_*/trial.log"))


def _file_times(folder):
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def _kill_when(proc, ready, timeout=600):
    start = time.time()
    while not ready():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.time() - start < timeout
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_grid_times_restarts_survives_a_kill_and_shares_the_work(data, tmp_path):
    sweep_dir = tmp_path / "sweep"
    cmd = _sweep(sweep_dir, data, *GRID, "--restarts=2")
    # Killed, with everything it started (as when a machine goes away), while the second trial
    # trains and has saved a checkpoint.
    first = start_in_repo(cmd, stderr=subprocess.PIPE, start_new_session=True)

    def second_trial_training():
        done = [d for d in _trial_dirs(sweep_dir) if (d / "eval_results.txt").exists()]
        running = [d for d in _trial_dirs(sweep_dir) if d not in done]
        return len(done) == 1 and any(list(d.glob("model.ckpt-*.index")) for d in running)

    _kill_when(first, second_trial_training)
    finished = [d for d in _trial_dirs(sweep_dir) if (d / "eval_results.txt").exists()]
    (interrupted,) = [d for d in _trial_dirs(sweep_dir) if d not in finished]
    times = {d: _file_times(d) for d in finished}

    # The same command again, twice at once: the two share what is left.
    procs = [start_in_repo(cmd, stderr=subprocess.PIPE) for _ in range(2)]
    logs = [p.communicate(timeout=900)[1] for p in procs]
    for proc, log in zip(procs, logs, strict=True):
        assert proc.returncode == 0, log[-3000:]
    ran = [set(re.findall(r"trial \d+/4 (\S+) (?:complete|failed)", log)) for log in logs]
    assert ran[0] and ran[1] and not ran[0] & ran[1], ran
    assert len(ran[0] | ran[1]) == 3

    trials = _trial_dirs(sweep_dir)
    assert len(trials) == 4
    for d in finished:
        assert _file_times(d) == times[d], f"{d} was run again"
    for d in trials:
        starts = (d / "trial.log").read_text().count("==== run_sweep.py:")
        assert starts == (2 if d == interrupted else 1), d
    assert "Resumed from" in (interrupted / "trial.log").read_text()
    assert read_eval_results(interrupted)["global_step"] == 16
    for d in trials:
        # --save_checkpoints_steps=1 and the runner's default of 5 kept: the sweep's
        # --keep_checkpoints=last leaves the newest only.
        assert [p.name for p in d.glob("model.ckpt-*.index")] == ["model.ckpt-16.index"], d

    report = json.loads((sweep_dir / "sweep_results.json").read_text())
    assert report["metric"] == "eval_f1"
    assert [t["status"] for t in report["trials"]] == ["complete"] * 4
    scores = {
        t["output_dir"]: read_eval_results(t["output_dir"])["eval_f1"] for t in report["trials"]
    }
    for t in report["trials"]:
        assert t["dev_metric"] == pytest.approx(scores[t["output_dir"]], abs=1e-7)
        assert t["seed"] == {"seed": 12345 + t["restart"]}
    assert report["best"]["dev_metric"] == pytest.approx(max(scores.values()), abs=1e-7)
    best_dir = report["best"]["output_dir"]
    assert scores[best_dir] == max(scores.values())
    for name in ("MRPC.tsv", "test_results.tsv", "eval_results.txt"):
        assert (sweep_dir / "best" / name).read_bytes() == open(
            os.path.join(best_dir, name), "rb"
        ).read()

    rows = (sweep_dir / "summary.tsv").read_text().splitlines()
    header = rows[0].split("\t")
    assert len(rows) == 3
    for row in rows[1:]:
        row = dict(zip(header, row.split("\t"), strict=True))
        lr, warmup = re.fullmatch(
            r"learning_rate=(\S+) warmup_proportion=(\S+)", row["setting"]
        ).groups()
        values = [
            scores[
                str(
                    sweep_dir
                    / "trials"
                    / f"learning_rate={lr},warmup_proportion={warmup}"
                    / f"restart_{r}"
                )
            ]
            for r in range(2)
        ]
        assert float(row["mean"]) == pytest.approx(np.mean(values), abs=1e-7)
        assert float(row["std"]) == pytest.approx(np.std(values, ddof=1), abs=1e-7)
        assert float(row["max"]) == pytest.approx(max(values), abs=1e-7)
    for png in ("expected_max.png", "scores.png"):
        assert (sweep_dir / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # A widened grid runs only what it adds.
    wider = run_in_repo(
        _sweep(sweep_dir, data, GRID[0] + ",0", GRID[1], "--restarts=2"), timeout=900
    )
    assert wider.returncode == 0, wider.stderr[-3000:]
    assert len(_trial_dirs(sweep_dir)) == 6
    for d in finished:
        assert _file_times(d) == times[d]


def test_a_failing_trial_does_not_stop_the_sweep(data, tmp_path):
    sweep_dir = tmp_path / "sweep"
    # 100 is longer than the tiny model's 64 positions: that trial's runner refuses it.
    # Two trials at once, one per device (CUDA_VISIBLE_DEVICES; on this CPU both run on it).
    cmd = _sweep(
        sweep_dir,
        data,
        "--grid=max_seq_length=16,100",
        "--devices=0,1",
        drop=("--max_seq_length",),
    )
    result = run_in_repo(cmd, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((sweep_dir / "sweep_results.json").read_text())
    status = {t["settings"]["max_seq_length"]: t for t in report["trials"]}
    assert status["16"]["status"] == "complete"
    assert status["100"]["status"] == "failed"
    assert status["100"]["error"].startswith("run_classifier.py: error: ")
    assert "sequence length 100" in status["100"]["error"]
    assert re.search(r"failed: run_classifier.py: error: .*sequence length 100", result.stderr)
    devices = {
        re.search(r"on device (\d)", (sweep_dir / "trials" / t["key"] / "trial.log").read_text())[1]
        for t in report["trials"]
    }
    assert devices == {"0", "1"}


@pytest.mark.parametrize(
    "flags,runner_extra,message",
    [
        (["--grid=learnin_rate=1e-3"], (), "run_classifier.py has no flag --learnin_rate"),
        (["--grid=learning_rate=1e-3"], ("--output_dir=/tmp/x",), "remove --output_dir"),
        (["--prune"], (), "add --eval_every_steps=N"),
        (["--grid=num_train_epochs=1,x"], (), "x is not a float"),
        # The runner's own check of its files, run before the sweep starts (--dry_run).
        ([], ("--data_dir=/nonexistent",), "cannot run: run_classifier.py: error: "),
    ],
)
def test_refused_before_any_trial(data, tmp_path, flags, runner_extra, message):
    result = run_in_repo(_sweep(tmp_path / "s", data, *flags, runner_extra=runner_extra))
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("run_sweep.py: error: ") and message in last, last
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_the_best_trial_is_the_runner_run_alone(minilm_tf1, tmp_path):
    # Real weights on real-format data: the sweep's best trial predicts the same files as its
    # command run alone, outside any sweep.
    data = tmp_path / "mrpc"
    write_mrpc(data, num_train=64, num_dev=32, num_test=16)
    runner = [
        "run_classifier.py",
        "--task_name=MRPC",
        f"--data_dir={data}",
        f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
        f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
        f"--init_checkpoint={minilm_tf1 / 'bert_model.ckpt'}",
        "--max_seq_length=24",
        "--train_batch_size=16",
        "--num_train_epochs=1",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--deterministic",
    ]
    sweep_dir = tmp_path / "sweep"
    sweep = [sys.executable, os.path.join(REPO, "run_sweep.py"), f"--sweep_dir={sweep_dir}"]
    result = run_in_repo(
        [
            *sweep,
            "--grid=learning_rate=5e-5",
            "--restarts=2",
            "--keep_checkpoints=none",
            "--",
            *runner,
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    trials = _trial_dirs(sweep_dir)
    assert len(trials) == 2
    for d in trials:
        assert (d / "eval_results.txt").exists() and not list(d.glob("model.ckpt-*")), d
        assert not (d / "checkpoint").exists()
    best = json.loads((sweep_dir / "sweep_results.json").read_text())["best"]
    alone = tmp_path / "alone"
    seed = f"--seed={best['seed']['seed']}"
    cmd = [sys.executable, os.path.join(REPO, runner[0]), *runner[1:], "--learning_rate=5e-5"]
    result = run_in_repo([*cmd, seed, f"--output_dir={alone}"], timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("MRPC.tsv", "test_results.tsv", "eval_results.txt"):
        assert (sweep_dir / "best" / name).read_bytes() == (alone / name).read_bytes(), name
