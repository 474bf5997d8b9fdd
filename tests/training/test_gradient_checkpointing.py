"""--gradient_checkpointing changes no result: the loss and gradients of the Trainer's step
with it equal those without (dropout on) under every strategy and setting the loop runs, and
a resumed run ends with the weights of an uninterrupted one."""

import shutil
import sys

import keras
import numpy as np
import pytest

from tests.helpers.pretraining_records import records_dataset_fn
from tests.helpers.scripts import run_in_repo
from tests.helpers.tiny_config import tiny_config, tiny_train_config
from training.loop import Trainer
from training.strategy import create_strategy
from training.tasks import PretrainingTask

CASES = ("one_device", "mirrored", "xla", "accumulation_2", "float16")


@pytest.fixture(scope="module")
def steps(data, tmp_path_factory):
    """One step per case of tests.helpers.checkpointing_gradients, with and without."""
    out = tmp_path_factory.mktemp("checkpointing")
    helper = [sys.executable, "-m", "tests.helpers.checkpointing_gradients"]
    paths = [f"--data={data / 'data.tfrecord'}", f"--out_dir={out}", f"--result={out / 'r.npz'}"]
    done = run_in_repo(helper + paths, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(out / "r.npz"))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_loss_and_gradients_equal_without_checkpointing(steps, case):
    without = [steps[k] for k in sorted(steps) if k.startswith(f"{case}/without/g")]
    with_ = [steps[k] for k in sorted(steps) if k.startswith(f"{case}/with/g")]
    assert len(without) == len(with_) > 30
    assert bool(steps[f"{case}/seeds_moved"])
    assert int(steps[f"{case}/replicas"]) == (2 if case == "mirrored" else 1)
    loss = float(steps[f"{case}/without/loss"])
    assert np.isfinite(loss) and loss > 1.0
    assert abs(float(steps[f"{case}/with/loss"]) - loss) <= 1e-6 * abs(loss)
    # Relative to the largest gradient of the model: the attention key biases' gradients are
    # zero in exact arithmetic (softmax ignores a shift shared by every key) and only rounding
    # noise (~1e-11) here, which no relative bound per tensor can hold.
    scale = max(float(np.abs(g).max()) for g in without)
    for i, (a, b) in enumerate(zip(without, with_, strict=True)):
        gap = float(np.abs(a.astype(np.float64) - b).max())
        assert gap <= 1e-6 * scale, (case, i, gap, scale)


def _trainer(out_dir):
    keras.utils.set_random_seed(1)
    config = tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    settings = dict(num_train_steps=6, save_checkpoints_steps=3, log_every_steps=3)
    train_config = tiny_train_config(out_dir, gradient_checkpointing=True, **settings)
    return Trainer(PretrainingTask(config), create_strategy("one_device"), train_config)


def _batches(data):
    return records_dataset_fn(data)


@pytest.mark.slow
def test_resumed_run_with_checkpointing_ends_with_uninterrupted_weights(data, tmp_path):
    full = _trainer(tmp_path / "full")
    full.train(_batches(data))
    (tmp_path / "resumed").mkdir()
    for path in (tmp_path / "full").glob("model.ckpt-3.*"):
        shutil.copy(path, tmp_path / "resumed")
    resumed = _trainer(tmp_path / "resumed")
    assert resumed.step == 3
    resumed.train(_batches(data))
    end = {n: v.numpy() for n, v in full.task.variable_map().items()}
    again = {n: v.numpy() for n, v in resumed.task.variable_map().items()}
    assert len(end) > 30 and sorted(again) == sorted(end)
    for name in end:
        np.testing.assert_array_equal(again[name], end[name], err_msg=name)
