"""The shared training loop (training/loop.py) run by a test harness on tiny data: one device
against mirrored, accumulation and XLA; inference against the model. Two worker processes:
tests/runners/test_multi_worker.py."""

import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from modeling.config import BertConfig
from tests.helpers.scripts import ENV, start_in_repo
from tests.helpers.tiny_config import TINY_CONFIG, tiny_train_config


def _harness(data, out_dir, result, *args, env=None):
    cmd = [
        sys.executable,
        "-m",
        "tests.helpers.train_tiny",
        "--data",
        str(data / "data.tfrecord"),
        "--out_dir",
        str(out_dir),
        "--result",
        str(result),
        *map(str, args),
    ]
    return start_in_repo(cmd, env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _run_harness(data, out_dir, result, *args):
    proc = _harness(data, out_dir, result, *args)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return dict(np.load(result))


def _max_weight_diff(a, b):
    return max(float(np.abs(a[k] - b[k]).max()) for k in a if k.startswith("w/"))


@pytest.mark.slow
def test_mirrored_and_accumulation_match_one_device(data, tmp_path):
    evaluate = ("--eval_steps", 3)
    base = _run_harness(data, tmp_path / "a", tmp_path / "a.npz", "--batch", 8, *evaluate)
    mirrored = _run_harness(
        data,
        tmp_path / "b",
        tmp_path / "b.npz",
        "--batch",
        8,
        "--strategy",
        "mirrored",
        "--num_cpu_devices",
        2,
        *evaluate,
    )
    accumulated = _run_harness(
        data, tmp_path / "c", tmp_path / "c.npz", "--batch", 8, "--accumulation", 4
    )
    assert int(mirrored["replicas"]) == 2
    assert len(base["losses"]) == 10
    assert np.abs(base["losses"] - mirrored["losses"]).max() <= 1e-5
    assert np.abs(base["losses"] - accumulated["losses"]).max() <= 1e-5
    assert _max_weight_diff(base, mirrored) <= 1e-5
    assert _max_weight_diff(base, accumulated) <= 1e-5
    # Evaluation reads its input on the caller's thread on one CPU replica and through the
    # distributed iterator on two; the metrics agree.
    assert not base["background"] and mirrored["background"]
    eval_keys = [k for k in base if k.startswith("eval/")]
    assert "eval/masked_lm_accuracy" in eval_keys and "eval/loss" in eval_keys
    for key in eval_keys:
        np.testing.assert_allclose(mirrored[key], base[key], rtol=0, atol=1e-5, err_msg=key)
    # Not trivially equal: training moved the weights away from where they started, all but the
    # attention key biases (softmax ignores a shift shared by every key: no gradient).
    for run in (base, mirrored, accumulated):
        keys = [k for k in run if k.startswith("w/")]
        stuck = [k for k in keys if np.abs(run[k] - run["init/" + k[2:]]).max() <= 1e-4]
        assert len(keys) > 30 and all(k.endswith("attention/self/key/bias") for k in stuck), stuck


@pytest.mark.slow
def test_xla_with_fused_update_matches_plain_step(data, tmp_path):
    """--use_xla on one replica compiles the update too; training is unchanged by it."""
    plain = _run_harness(data, tmp_path / "a", tmp_path / "a.npz", "--batch", 8)
    xla = _run_harness(data, tmp_path / "b", tmp_path / "b.npz", "--batch", 8, "--xla")
    assert len(xla["losses"]) == 10
    # Measured: losses 4.8e-7, weights 1.2e-7 apart (XLA fuses and orders sums its own way).
    assert np.abs(plain["losses"] - xla["losses"]).max() <= 5e-6
    assert _max_weight_diff(plain, xla) <= 2e-6


def test_predict_with_xla_matches_eager_model_in_order(tmp_path):
    """Trainer.predict (with and without XLA, short last batch) equals calling the model."""
    from training.loop import Trainer
    from training.strategy import create_strategy
    from training.tasks import ClassifierTask

    config = BertConfig(**TINY_CONFIG)
    rng = np.random.default_rng(3)
    n, seq = 10, 12
    lengths = rng.integers(3, seq + 1, n)
    mask = (np.arange(seq)[None] < lengths[:, None]).astype(np.int32)
    features = {
        "input_ids": rng.integers(1, TINY_CONFIG["vocab_size"], (n, seq)).astype(np.int32) * mask,
        "input_mask": mask,
        "segment_ids": (np.arange(seq)[None] >= lengths[:, None] // 2).astype(np.int32) * mask,
        "label_ids": rng.integers(0, 3, n).astype(np.int32),
    }
    dataset = tf.data.Dataset.from_tensor_slices(features).batch(4)  # 4 + 4 + 2
    strategy = create_strategy("one_device")
    outputs = {}
    for xla in (False, True):
        keras.utils.set_random_seed(7)
        trainer = Trainer(
            ClassifierTask(config, 3),
            strategy,
            tiny_train_config(tmp_path / str(xla), use_xla=xla),
        )
        outputs[xla] = trainer.predict(lambda _: dataset)["predictions"]
        expected = trainer.task.forward(features, training=False)["predictions"].numpy()
        np.testing.assert_allclose(outputs[xla], expected, rtol=0, atol=1e-5)
    assert outputs[False].shape == (n, 3)
    np.testing.assert_allclose(outputs[True], outputs[False], rtol=0, atol=1e-5)
