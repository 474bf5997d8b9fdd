"""The runners as two worker processes on localhost (TF_CONFIG), against one-device runs of the
same commands: the same weights and results, files written by the chief only, resume after
both workers are killed, a clear error when a worker never comes or dies during the run, and
scripts/run_pretraining_multiworker.sh."""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from data.dev_metrics import read_eval_history
from modeling import tf1_checkpoint
from tests.helpers.glue_tasks import write_sst2
from tests.helpers.scripts import ENV, REPO, run_in_repo, start_in_repo
from tests.helpers.tiny_config import write_tiny_config


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _start_workers(cmd, tmp_path, count=2, ports=None):
    """Starts `count` workers of one cluster; each has its own TMPDIR (to see what it leaves)."""
    ports = ports or _free_ports(count)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for index in range(count):
        scratch = tmp_path / f"tmp{index}"
        scratch.mkdir(exist_ok=True)
        tf_config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
        env = {**ENV, "TF_CONFIG": json.dumps(tf_config), "TMPDIR": str(scratch)}
        procs.append(
            start_in_repo(
                [*cmd, "--strategy=multi_worker_mirrored"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    return procs


def _wait(procs, timeout=600):
    errors = [proc.communicate(timeout=timeout)[1] for proc in procs]
    for proc, err in zip(procs, errors, strict=True):
        assert proc.returncode == 0, err[-3000:]
    return errors


def _weights(path):
    return tf1_checkpoint.read_checkpoint(str(path))


def _max_diff(a, b):
    assert sorted(a) == sorted(b)
    return max(float(np.abs(a[k] - b[k]).max()) for k in a if a[k].dtype.kind == "f")


def _results(path):
    return dict(line.split(" = ") for line in path.read_text().splitlines())


def _assert_results_close(a, b):
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_allclose(float(a[key]), float(b[key]), rtol=0, atol=1e-5, err_msg=key)


def _no_dropout_config(data):
    """Writes the tiny config without dropout (runs compared weight for weight) beside the
    records; returns its path. Each command that names it writes it, so no test depends on
    another having run first."""
    path = data / "no_dropout.json"
    write_tiny_config(path, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return path


def _pretrain_cmd(data, out, *extra):
    return [
        sys.executable,
        os.path.join(REPO, "run_pretraining.py"),
        f"--input_file={data / 'data.tfrecord'}",
        f"--output_dir={out}",
        f"--bert_config_file={_no_dropout_config(data)}",
        "--do_train",
        "--do_eval",
        "--train_batch_size=8",
        "--eval_batch_size=8",
        "--max_eval_steps=5",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--num_train_steps=30",
        "--num_warmup_steps=3",
        "--learning_rate=1e-3",
        "--iterations_per_loop=1",
        "--log_every_steps=1",
        "--deterministic",
        *extra,
    ]


@pytest.fixture(scope="module")
def pretrained(data, tmp_path_factory):
    """One-device and two-worker runs of the same run_pretraining command."""
    root = tmp_path_factory.mktemp("pretraining")
    one = run_in_repo(_pretrain_cmd(data, root / "one"), timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    # The two workers as scripts/run_pretraining_multiworker.sh starts them (the pattern users
    # copy to hosts), with the one-device run's flags; both share one TMPDIR here.
    (root / "tmp").mkdir()
    env = {
        **ENV,
        "NUM_WORKERS": "2",
        "BASE_PORT": str(_free_ports(1)[0]),
        "LOG_DIR": str(root),
        "BERT_CONFIG": str(data / "no_dropout.json"),
        "INPUT_FILE": str(data / "data.tfrecord"),
        "TMPDIR": str(root / "tmp"),
    }
    script = os.path.join(REPO, "scripts", "run_pretraining_multiworker.sh")
    flags = _pretrain_cmd(data, root / "two")[2:]
    two = subprocess.run(
        ["bash", script, str(root / "two"), *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    logs = [(root / f"pretraining-worker-{i}.log").read_text() for i in range(2)]
    assert two.returncode == 0, two.stderr + logs[0][-3000:] + logs[1][-3000:]
    assert all("Strategy multi_worker_mirrored with 2 replica(s)" in log for log in logs)
    return root


@pytest.mark.slow
def test_pretraining_two_workers_equal_one_device(pretrained):
    one, two = pretrained / "one", pretrained / "two"
    a, b = _weights(one / "bert_model.ckpt"), _weights(two / "bert_model.ckpt")
    assert _max_diff(a, b) <= 1e-5
    _assert_results_close(_results(one / "eval_results.txt"), _results(two / "eval_results.txt"))
    # Only the chief wrote, the same files as one device; the other worker left nothing.
    assert sorted(os.listdir(one)) == sorted(os.listdir(two))
    assert os.listdir(pretrained / "tmp") == []


@pytest.mark.slow
def test_two_workers_killed_resume_to_the_uninterrupted_weights(data, pretrained, tmp_path):
    out = tmp_path / "killed"
    cmd = _pretrain_cmd(data, out, "--save_checkpoints_steps=5", "--num_train_steps=30")
    procs = _start_workers(cmd, tmp_path)
    deadline = time.time() + 300
    while not (out / "model.ckpt-10.index").exists():
        assert time.time() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.05)
    for proc in procs:
        proc.kill()
        proc.wait()
    assert not (out / "bert_model.ckpt.index").exists()
    errors = _wait(_start_workers(cmd, tmp_path))
    assert "Resumed from" in errors[0] and "Resumed from" in errors[1]
    assert (
        _max_diff(
            _weights(out / "bert_model.ckpt"), _weights(pretrained / "two" / "bert_model.ckpt")
        )
        <= 1e-6
    )


def _classifier_cmd(data, out):
    return [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        "--task_name=SST-2",
        f"--data_dir={data}",
        f"--vocab_file={os.path.join(REPO, 'tests/testdata/glue/vocab.txt')}",
        f"--bert_config_file={data / 'bert_config.json'}",
        "--max_seq_length=16",
        "--train_batch_size=8",
        "--eval_batch_size=4",
        "--predict_batch_size=4",
        "--learning_rate=2e-3",
        "--num_train_epochs=2",
        "--classifier_dropout_prob=0",
        f"--output_dir={out}",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--deterministic",
        # Dev evaluations during training too: every worker evaluates, the chief writes.
        "--eval_every_steps=6",
    ]


@pytest.mark.slow
def test_classifier_two_workers_equal_one_device(tmp_path):
    data = tmp_path / "sst2"
    # 21 dev and 13 test examples: neither a multiple of the batch, so the last batches pad.
    write_sst2(data, num_train=64, num_dev=21, num_test=13)
    write_tiny_config(
        data / "bert_config.json",
        vocab_size=186,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    one = run_in_repo(_classifier_cmd(data, tmp_path / "one"), timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    _wait(_start_workers(_classifier_cmd(data, tmp_path / "two"), tmp_path))
    a, b = tmp_path / "one", tmp_path / "two"
    variable = (_results(a / "eval_results.txt"), np.loadtxt(a / "test_results.tsv"))
    # One device, evaluating and predicting again on the fixed-shape path the workers take
    # (and a TPU would), from the same checkpoint: the same files.
    padded = run_in_repo(
        [*_classifier_cmd(data, a), "--do_train=false", "--pad_to_whole_batches"], timeout=600
    )
    assert padded.returncode == 0, padded.stderr[-3000:]
    assert "Num examples = 24 (21 actual, 3 padding)" in padded.stderr
    # Equal up to float rounding: a short last batch and a whole one run other kernels.
    _assert_results_close(_results(a / "eval_results.txt"), variable[0])
    np.testing.assert_allclose(np.loadtxt(a / "test_results.tsv"), variable[1], rtol=0, atol=1e-6)
    assert _max_diff(_weights(a / "model.ckpt-16"), _weights(b / "model.ckpt-16")) <= 1e-5
    _assert_results_close(_results(a / "eval_results.txt"), _results(b / "eval_results.txt"))
    probabilities = [np.loadtxt(d / "test_results.tsv") for d in (a, b)]
    assert probabilities[0].shape == (13, 2)
    np.testing.assert_allclose(probabilities[0], probabilities[1], rtol=0, atol=1e-5)
    assert (a / "SST-2.tsv").read_text() == (b / "SST-2.tsv").read_text()
    one_history, two_history = read_eval_history(a), read_eval_history(b)
    # Steps 6, 12 and the final 16; the evaluation-only run above evaluated step 16 again.
    assert [e["step"] for e in two_history] == [6, 12, 16] == [e["step"] for e in one_history]
    for x, y in zip(one_history, two_history, strict=True):
        _assert_results_close(x["results"], y["results"])
    assert sorted(os.listdir(a)) == sorted(os.listdir(b))
    assert os.listdir(tmp_path / "tmp1") == []


@pytest.mark.slow
def test_missing_worker_fails_with_its_address(data, tmp_path):
    ports = _free_ports(2)
    (proc,) = _start_workers(
        _pretrain_cmd(data, tmp_path / "out", "--multi_worker_timeout=3"), tmp_path, 1, ports
    )
    # Worker 0 of a two-worker cluster, started alone.
    start = time.time()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert time.time() - start < 60
    assert f"127.0.0.1:{ports[1]} did not answer within 3 s" in err
    assert "TF_CONFIG=" in err
    assert not (tmp_path / "out").exists()


def _files(directory):
    return {
        os.path.relpath(path, directory): (os.path.getsize(path), os.path.getmtime(path))
        for path in glob.glob(os.path.join(directory, "**"), recursive=True)
        if os.path.isfile(path)
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "victim,fault",
    [(0, "killed"), (1, "killed"), (1, "stuck")],
    ids=["chief_killed", "worker_killed", "worker_stuck"],
)
def test_a_worker_lost_mid_run_stops_the_other_with_the_checkpoint_to_resume(
    data, tmp_path, victim, fault
):
    """SIGKILL: the dead process's connections close. "stuck": SIGSTOP, a process that
    neither answers nor dies, which --collective_timeout stops before TensorFlow's heartbeat
    timeout (about 10 s) would."""
    ports = _free_ports(2)
    out = tmp_path / "out"
    cmd = _pretrain_cmd(
        data,
        out,
        "--save_checkpoints_steps=5",
        "--num_train_steps=100000",
        *(["--collective_timeout=5"] if fault == "stuck" else []),
    )
    procs = _start_workers(cmd, tmp_path, ports=ports)
    try:
        deadline = time.time() + 300
        while not (out / "model.ckpt-5.index").exists():
            ended = [p.communicate()[1][-3000:] for p in procs if p.poll() is not None]
            assert time.time() < deadline and not ended, ended
            time.sleep(0.05)
        if fault == "killed":
            procs[victim].kill()
            procs[victim].wait()
        else:
            procs[victim].send_signal(signal.SIGSTOP)
        lost_at = time.time()
        left = _files(out)
        survivor = procs[1 - victim]
        _, err = survivor.communicate(timeout=120)
        stopped_after = time.time() - lost_at
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert survivor.returncode == 1, err[-3000:]
    # The survivor's next collective fails at once, or after --collective_timeout.
    assert stopped_after < 30
    steps = [int(re.search(r"ckpt-(\d+)", p).group(1)) for p in glob.glob(f"{out}/*.index")]
    what = (
        "failed or cannot be reached ("
        if fault == "killed"
        else "did not answer within --collective_timeout ("
    )
    last = err.rstrip("\n").splitlines()[-1]
    assert last.startswith(
        f"run_pretraining.py: error: Worker 127.0.0.1:{ports[victim]} (worker {victim}) of the "
        f"multi-worker cluster {what}"
    ), last
    assert last.endswith(
        f"); the last checkpoint in {out} is step {max(steps)}: run every worker's command "
        "again to resume from it."
    ), last
    if victim == 0:
        # The chief alone writes to --output_dir: the other worker changed nothing there, and
        # its scratch copies of the run's files went away with it.
        assert _files(out) == left
        assert glob.glob(str(tmp_path / "tmp1" / "bert-worker-*")) == []


@pytest.mark.slow
def test_with_a_file_per_worker_each_reads_only_its_own(data, tmp_path):
    """Two --input_file files, two workers: file sharding, each worker reading every second
    file. The second file is not a TFRecord file: worker 1, which reads it, names it; worker 0
    never reads it and stops on its peer's failure instead."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "a.tfrecord").write_bytes((data / "data.tfrecord").read_bytes())
    (files / "b.tfrecord").write_bytes(b"not a TFRecord file, " * 100)
    write_tiny_config(files / "bert_config.json")
    out = tmp_path / "out"
    cmd = _pretrain_cmd(data, out, "--do_eval=false")
    cmd = [c for c in cmd if not c.startswith(("--input_file=", "--bert_config_file="))]
    cmd.append(f"--input_file={files / 'a.tfrecord'},{files / 'b.tfrecord'}")
    cmd.append(f"--bert_config_file={files / 'bert_config.json'}")
    procs = _start_workers(cmd, tmp_path)
    errors = [proc.communicate(timeout=300)[1] for proc in procs]
    last = [err.strip().splitlines()[-1] for err in errors]
    assert all(proc.returncode == 1 for proc in procs), errors[0][-2000:] + errors[1][-2000:]
    assert f"{files / 'b.tfrecord'} is damaged" in last[1], last[1]
    # Worker 0 lists both files (the original's "*** Input Files ***") but reads only a.
    assert "is damaged" not in errors[0], errors[0][-3000:]
    assert "failed or cannot be reached" in last[0], last[0]
