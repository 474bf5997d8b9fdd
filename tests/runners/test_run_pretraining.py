"""run_pretraining.py end to end on tiny data: learning, export, resume, signals, bad input."""

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.heads import PretrainingHeads
from tests.helpers.scripts import REPO, run_in_repo, start_in_repo


def _pretrain_cmd(data, out_dir, *extra):
    return [
        sys.executable,
        os.path.join(REPO, "run_pretraining.py"),
        f"--input_file={data / 'data.tfrecord'}",
        f"--output_dir={out_dir}",
        f"--bert_config_file={data / 'bert_config.json'}",
        "--do_train",
        "--train_batch_size=8",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--num_warmup_steps=5",
        "--learning_rate=1e-3",
        "--iterations_per_loop=1",
        "--log_every_steps=1",
        "--deterministic",
        *extra,
    ]


def _scalars(log_dir):
    """TensorBoard scalars of `log_dir`'s event files: tag -> [(step, value)]."""
    found = {}
    for path in sorted(tf.io.gfile.glob(str(log_dir / "events.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                number = float(tf.make_ndarray(value.tensor)) if value.HasField("tensor") else 0
                found.setdefault(value.tag, []).append((event.step, number))
    return found


def _final_weights(out_dir):
    return tf1_checkpoint.read_checkpoint(str(out_dir / "bert_model.ckpt"))


@pytest.fixture(scope="module")
def forty_steps(data, tmp_path_factory):
    """The final weights of an uninterrupted 40-step run."""
    out = tmp_path_factory.mktemp("forty_steps") / "full"
    full = run_in_repo(_pretrain_cmd(data, out, *_FORTY_STEPS), timeout=600)
    assert full.returncode == 0, full.stderr[-3000:]
    return _final_weights(out)


_FORTY_STEPS = ["--num_train_steps=40", "--save_checkpoints_steps=5"]


def _saving(out):
    """True while a checkpoint is being written (its files under a temporary name)."""
    return any(name.startswith(".tmp-") for name in os.listdir(out)) if out.exists() else False


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["after_save", "mid_step", "mid_save"])
def test_resume_after_kill_equals_uninterrupted_run(data, forty_steps, tmp_path, moment):
    """kill -9 just after a checkpoint appears, in the middle of a later step, or while a
    checkpoint's files are being written; the same command then resumes to the weights of
    the uninterrupted run, bit for bit."""
    out = tmp_path / "killed"
    # Saving at every step gives the mid-save kill a save to catch at every step.
    every = ["--save_checkpoints_steps=1"] if moment == "mid_save" else []
    victim = start_in_repo(
        _pretrain_cmd(data, out, *_FORTY_STEPS, *every),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rng = np.random.default_rng(20)
    # A seeded point among the first checkpoints (5, 10, 15 or 20 of 40 steps).
    first = int(rng.integers(1, 5)) * 5
    deadline = time.time() + 300

    def wait_for(step):
        target = out / f"model.ckpt-{step}.index"
        while not target.exists():
            assert time.time() < deadline and victim.poll() is None, f"no checkpoint {step}"
            time.sleep(0.001 if moment == "mid_save" else 0.005)
        return time.time()

    seen = wait_for(first)
    if moment == "mid_step":
        # Steps take 10-300 ms depending on the machine's load, so the kill lands at a seeded
        # fraction of the measured time between two checkpoints: inside the 5 steps after the
        # second one, never past the end of the run (at most step 30 of 40).
        interval = wait_for(first + 5) - seen
        time.sleep(float(rng.uniform(0.2, 0.8)) * interval)
    elif moment == "mid_save":
        # Stop the run the moment a save's temporary files appear; if the save finished in
        # between, let it go on to the next one (a save at every step).
        while True:
            while not _saving(out):
                assert time.time() < deadline and victim.poll() is None, "no save caught"
            victim.send_signal(signal.SIGSTOP)
            if _saving(out):
                break
            victim.send_signal(signal.SIGCONT)
    victim.kill()
    victim.wait()
    assert victim.returncode == -signal.SIGKILL  # killed, not finished
    assert not (out / "bert_model.ckpt.index").exists()
    resumed = run_in_repo(_pretrain_cmd(data, out, *_FORTY_STEPS, *every), timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resumed from" in resumed.stderr
    final = _final_weights(out)
    assert sorted(final) == sorted(forty_steps)
    for name in forty_steps:
        np.testing.assert_array_equal(final[name], forty_steps[name], err_msg=name)


def _truncate(path, keep_fraction=0.5):
    """Cuts a file short, as a file system that loses the end of a file on a lost machine."""
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: int(len(data) * keep_fraction)])
    return data[: int(len(data) * keep_fraction)]


@pytest.fixture(scope="module")
def ten_steps(data, tmp_path_factory):
    """An uninterrupted 10-step run saving model.ckpt-5 and model.ckpt-10, and its flags."""
    out = tmp_path_factory.mktemp("ten_steps")
    steps = ["--num_train_steps=10", "--save_checkpoints_steps=5"]
    result = run_in_repo(_pretrain_cmd(data, out / "full", *steps), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return out / "full", steps


def _preempted_copy(full, target, damaged):
    """output_dir as a run preempted just after saving model.ckpt-10 leaves it, with the
    files in `damaged` (suffixes of model.ckpt-10) cut short."""
    os.makedirs(target)
    for name in os.listdir(full):
        if name.startswith(("model.ckpt-", "checkpoint")):
            shutil.copy(full / name, target / name)
    return {s: _truncate(target / f"model.ckpt-10{s}") for s in damaged}


@pytest.mark.slow
def test_resume_skips_a_truncated_newest_checkpoint(data, ten_steps, tmp_path):
    full, steps = ten_steps
    out = tmp_path / "preempted"
    cut = _preempted_copy(full, out, [".data-00000-of-00001"])
    resumed = run_in_repo(_pretrain_cmd(data, out, *steps), timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stderr
    assert f"Skipping checkpoint {out / 'model.ckpt-10'}, which cannot be read: " in log
    assert f"Resumed from {out / 'model.ckpt-5'} at step 5" in log
    # Only the steps after model.ckpt-5 were trained again.
    assert "step 5/10 " not in log and "step 6/10 " in log and "step 10/10 " in log
    # The damaged files are kept, byte for byte, beside the new model.ckpt-10.
    for suffix, content in cut.items():
        assert (out / f"model.ckpt-10.damaged{suffix}").read_bytes() == content
    assert tf1_checkpoint.read_checkpoint(str(out / "model.ckpt-10"))
    a, b = _final_weights(full), _final_weights(out)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=0, atol=1e-6, err_msg=name)


def test_resume_with_no_readable_checkpoint_is_one_sentence(data, ten_steps, tmp_path):
    full, steps = ten_steps
    out = tmp_path / "preempted"
    _preempted_copy(full, out, [".data-00000-of-00001"])
    _truncate(out / "model.ckpt-5.index", 0.3)
    before = {p: (out / p).read_bytes() for p in os.listdir(out)}
    result = run_in_repo(_pretrain_cmd(data, out, *steps), timeout=600)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"run_pretraining.py: error: No checkpoint in output_dir {out} can be read to resume "
        "from (see the warnings above): restore the model.ckpt-* files from a good copy, or "
        "move them and the 'checkpoint' file out of it to start over."
    )
    for name, what in [
        ("model.ckpt-10", "model.ckpt-10.data-00000-of-00001 is truncated"),
        ("model.ckpt-5", "model.ckpt-5.index is damaged or truncated"),
    ]:
        assert f"Skipping checkpoint {out / name}, which cannot be read: {out / what}" in (
            result.stderr
        )
    # Nothing deleted, overwritten or added (TensorBoard's folder aside).
    assert {p: (out / p).read_bytes() for p in os.listdir(out) if p != "train"} == before


def _eval_results(out):
    return dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())


@pytest.mark.slow
def test_training_learns_and_exports_original_layout(data, tmp_path):
    before = run_in_repo(
        [
            c
            for c in _pretrain_cmd(
                data, tmp_path / "before", "--do_eval", "--eval_batch_size=16", "--max_eval_steps=8"
            )
            if c != "--do_train"
        ],
        timeout=600,
    )
    assert before.returncode == 0, before.stderr[-3000:]
    start = _eval_results(tmp_path / "before")
    assert start["global_step"] == "0"
    out = tmp_path / "out"
    result = run_in_repo(
        _pretrain_cmd(
            data,
            out,
            "--num_train_steps=400",
            "--save_checkpoints_steps=200",
            "--do_eval",
            "--eval_batch_size=16",
            "--max_eval_steps=8",
            "--train_batch_size=32",
            "--num_warmup_steps=30",
            "--learning_rate=3e-3",
            "--iterations_per_loop=100",
            "--log_every_steps=100",
        ),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "step 400/400 loss=" in result.stderr and "examples/s ETA" in result.stderr
    lines = (out / "eval_results.txt").read_text().splitlines()
    keys = [line.split(" = ")[0] for line in lines]
    assert (
        keys
        == sorted(keys)
        == [
            "global_step",
            "loss",
            "masked_lm_accuracy",
            "masked_lm_loss",
            "next_sentence_accuracy",
            "next_sentence_loss",
        ]
    )
    values = _eval_results(out)
    assert values["global_step"] == "400"
    # Chance is 1/99 for masked tokens and 1/2 for NSP; the data make both learnable.
    assert float(start["masked_lm_accuracy"]) < 0.1 and float(values["masked_lm_accuracy"]) > 0.5
    assert float(start["next_sentence_accuracy"]) < 0.7
    assert float(values["next_sentence_accuracy"]) > 0.9
    assert float(values["loss"]) < float(start["loss"]) - 1.0
    assert os.path.isdir(out / "train") and tf.io.gfile.glob(str(out / "train" / "events.*"))
    # The evaluation's progress closing line, and its metrics beside the training curves, at
    # the step they belong to, equal to eval_results.txt.
    assert "eval: 8/8 batches" in result.stderr
    board = _scalars(out / "eval")
    assert set(board) == set(keys) - {"global_step"}
    for key, points in board.items():
        assert [step for step, _ in points] == [400]
        assert points[0][1] == pytest.approx(float(values[key]), rel=1e-6)
    # The run's flags, as a flagfile that repeats it.
    flag_lines = (out / "flags.txt").read_text().splitlines()
    assert "--num_train_steps=400" in flag_lines and "--max_eval_steps=8" in flag_lines
    assert f"--output_dir={out}" in flag_lines
    config = BertConfig.from_json_file(str(out / "bert_config.json"))
    model, heads = BertModel(config), PretrainingHeads(config)
    tf1_checkpoint.load_tf1_checkpoint(
        str(out / "bert_model.ckpt"), bert_model=model, pretraining_heads=heads
    )
    saved = tf1_checkpoint.read_checkpoint(str(out / "model.ckpt-400"), include_optimizer=True)
    assert saved["global_step"] == 400 and "bert/pooler/dense/kernel/adam_m" in saved


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_saves_and_exits(data, tmp_path, signum):
    """SIGTERM (a preemption) and SIGINT (Ctrl-C) both save a checkpoint, then exit."""
    out = tmp_path / "out"
    proc = start_in_repo(
        _pretrain_cmd(data, out, "--num_train_steps=100000", "--save_checkpoints_steps=100000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 300
    while not tf.io.gfile.glob(str(out / "train" / "events.*")):
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err[-2000:]
    assert "Stopped by signal" in err
    saved = [p for p in os.listdir(out) if p.startswith("model.ckpt-") and p.endswith(".index")]
    assert len(saved) == 1


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--do_train=false"], "At least one of `do_train` or `do_eval` must be True."),
        (["--input_file=/nonexistent/*.tfrecord"], "no file matches '/nonexistent/*.tfrecord'"),
        (
            ["--max_seq_length=64"],
            "feature 'input_ids' has length 32 but the flags expect 64; pass the --max_seq_length",
        ),
        (
            ["--max_predictions_per_seq=20"],
            "has length 5 but the flags expect 20; pass the --max_predictions_per_seq",
        ),
    ],
)
def test_bad_input_is_a_clear_error(data, tmp_path, extra, message):
    cmd = [
        c
        for c in _pretrain_cmd(data, tmp_path / "o", "--num_train_steps=1")
        if not any(c.startswith(e.split("=")[0] + "=") for e in extra)
    ]
    result = run_in_repo(cmd + extra, timeout=300)
    assert result.returncode != 0
    assert message in result.stderr
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_init_checkpoint_mismatch_is_a_clear_error(data, tmp_path, original_gelu):
    result = run_in_repo(
        _pretrain_cmd(
            data,
            tmp_path / "o",
            "--num_train_steps=1",
            f"--init_checkpoint={original_gelu['ckpt']}",
        ),
        timeout=300,
    )
    assert result.returncode != 0
    assert (
        "shape mismatch: bert/embeddings/token_type_embeddings: checkpoint [3, 32] vs model [2, 32]"
    ) in result.stderr
    assert not tf.io.gfile.glob(str(tmp_path / "o" / "model.ckpt-*"))


def test_nan_loss_stops_with_the_step(data, tmp_path):
    """A learning rate of 1e30 gives weights of about 1e30 after the first update; the next
    forward pass overflows and its loss is NaN. The run stops naming that step, and the
    checkpoint saved before it stays the newest one, as it was saved."""
    out = tmp_path / "o"
    result = run_in_repo(
        _pretrain_cmd(
            data,
            out,
            "--num_train_steps=5",
            "--num_warmup_steps=0",
            "--learning_rate=1e30",
            "--save_checkpoints_steps=1",
        ),
        timeout=300,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(
        "run_pretraining.py: error: Loss is nan at step 2: training stopped."
    )
    assert f"The last checkpoint in {out} is the last good state" in lines[-1]
    assert [os.path.basename(p) for p in tf.io.gfile.glob(str(out / "model.ckpt-*.index"))] == [
        "model.ckpt-1.index"
    ]
    saved = tf1_checkpoint.read_checkpoint(str(out / "model.ckpt-1"), include_optimizer=True)
    assert all(np.isfinite(value).all() for value in saved.values())
    assert int(saved["global_step"]) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [
        ["--precision=mixed_bfloat16", "--use_xla", "--num_accumulation_steps=2"],
        ["--precision=mixed_float16", "--optimizer=lamb", "--gradient_checkpointing"],
    ],
)
def test_precision_xla_lamb_and_accumulation_train(data, tmp_path, extra):
    out = tmp_path / "o"
    result = run_in_repo(
        _pretrain_cmd(
            data,
            out,
            "--num_train_steps=60",
            "--train_batch_size=16",
            "--learning_rate=3e-3",
            "--iterations_per_loop=20",
            "--log_every_steps=20",
            *extra,
        ),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    losses = [
        float(line.split("loss=")[1].split()[0])
        for line in result.stderr.splitlines()
        if "/60 loss=" in line
    ]
    assert len(losses) == 3 and all(np.isfinite(losses)) and losses[-1] < losses[0]
    saved = tf1_checkpoint.read_checkpoint(str(out / "model.ckpt-60"), include_optimizer=True)
    assert saved["bert/pooler/dense/kernel"].dtype == np.float32
    if "--precision=mixed_float16" in extra:
        assert saved["_training_state/loss_scale"] > 0


def test_mirrored_without_gpus_fails_before_writing(data, tmp_path):
    """CUDA_VISIBLE_DEVICES="" (the tests' environment) hides every GPU from TensorFlow."""
    out = tmp_path / "o"
    result = run_in_repo(_pretrain_cmd(data, out, "--num_gpus=1"), timeout=300)
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.splitlines()[-1] == (
        "run_pretraining.py: error: --num_gpus=1 asks for GPUs but TensorFlow sees none on this "
        "machine: install GPU support with `pip install -r requirements-gpu.txt` (or run the "
        "container of docs/gpu_and_containers.md), check that `nvidia-smi` lists the GPUs (if "
        "not, install the NVIDIA driver) and that CUDA_VISIBLE_DEVICES does not hide them, or "
        "pass --num_cpu_devices=N to test on N replicas on the CPU."
    )
    assert "Traceback" not in result.stderr
    assert not out.exists()
