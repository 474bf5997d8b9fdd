"""The whole training step against the original: run_pretraining.py's model_fn training op.

The Trainer (forward, masked-LM and next-sentence losses, loss scaling, the global-norm clip it
applies itself, AdamWeightDecay and the warmup + linear-decay schedule) and the original's
`model_fn` in TF1 graph mode (tests/oracles/original_train_step.py) start from the same
checkpoint and read the same records in the same order for 20 steps; dropout is off on both
sides so that the steps are deterministic.
"""

import json

import keras
import numpy as np
import pytest

from data.records import input_pipeline
from modeling import tf1_checkpoint
from modeling.config import BertConfig
from tests.helpers.pretraining_records import write_records
from tests.helpers.tiny_config import tiny_train_config
from tests.oracles import run_oracle
from training import loop
from training.strategy import create_strategy
from training.tasks import PretrainingTask

STEPS, WARMUP, BATCH, SEQ, PREDICTIONS = 20, 5, 8, 32, 5
LEARNING_RATE = 1e-3


@pytest.fixture(scope="module")
def problem(original_gelu, tmp_path_factory):
    """The original's checkpoint and config without dropout, the records, and the weights and
    losses the original's training op reaches on them."""
    root = tmp_path_factory.mktemp("train_step")
    with open(original_gelu["config"]) as f:
        config = json.load(f)
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (root / "bert_config.json").write_text(json.dumps(config))
    write_records(root / "data.tfrecord", num_examples=BATCH * STEPS, seq_length=SEQ, seed=4)
    run_oracle(
        "original_train_step",
        [
            f"--bert_config_file={root / 'bert_config.json'}",
            f"--init_checkpoint={original_gelu['ckpt']}",
            f"--input_file={root / 'data.tfrecord'}",
            f"--batch_size={BATCH}",
            f"--max_seq_length={SEQ}",
            f"--max_predictions_per_seq={PREDICTIONS}",
            f"--learning_rate={LEARNING_RATE}",
            f"--num_train_steps={STEPS}",
            f"--num_warmup_steps={WARMUP}",
            f"--out={root / 'original.npz'}",
        ],
    )
    with np.load(root / "original.npz") as npz:
        original = {name: npz[name] for name in npz.files}
    return {"root": root, "ckpt": original_gelu["ckpt"], "original": original}


def _train(problem, out_dir, precision="float32", **overrides):
    """Our run of the same steps; returns (weights by checkpoint name, [(step, loss)])."""
    keras.utils.set_random_seed(1)
    root = problem["root"]
    config = BertConfig.from_json_file(str(root / "bert_config.json"))
    train_config = tiny_train_config(
        out_dir,
        learning_rate=LEARNING_RATE,
        train_batch_size=BATCH,
        num_train_steps=STEPS,
        num_warmup_steps=WARMUP,
        init_checkpoint=problem["ckpt"],
        precision=precision,
        **overrides,
    )
    trainer = loop.Trainer(PretrainingTask(config), create_strategy("one_device"), train_config)
    losses = trainer.train(
        lambda skip, batching: input_pipeline.pretraining_dataset(
            [str(root / "data.tfrecord")],
            SEQ,
            PREDICTIONS,
            BATCH,
            False,
            skip_batches=skip,
            batching=batching,
        )
    )
    weights = {n: v.numpy().astype(np.float32) for n, v in trainer.task.variable_map().items()}
    return weights, losses


def _largest_difference(weights, original):
    return max(float(np.max(np.abs(weights[name] - original[name]))) for name in weights)


@pytest.mark.slow
def test_twenty_steps_equal_the_original_training_op(problem, tmp_path):
    original = problem["original"]
    weights, losses = _train(problem, tmp_path / "float32")
    assert int(original["global_step"]) == STEPS
    # Every variable the original trains, and no other, under the same name.
    assert set(weights) == set(original) - {"losses", "global_step"}
    # Measured: losses within 9e-8 relative, weights within 1.7e-6 after 20 steps (which moved
    # them by up to 4.9e-2).
    np.testing.assert_allclose([loss for _, loss in losses], original["losses"], rtol=1e-6)
    for name, value in weights.items():
        np.testing.assert_allclose(value, original[name], atol=1e-5, err_msg=name)
    # The steps did train: the weights moved far more than the tolerance.
    initial = tf1_checkpoint.read_checkpoint(problem["ckpt"])
    assert _largest_difference(weights, initial) > 1e-2


def _mean_difference(weights, reference):
    return float(np.mean([np.mean(np.abs(weights[n] - reference[n])) for n in weights]))


def _gradients_as_scaled(self, grads):
    """DynamicLossScale.unscale removed: the float16 run applies the scaled gradients."""
    return grads


@pytest.mark.slow
def test_mixed_float16_unscales_before_clipping(problem, tmp_path, monkeypatch):
    """float16 with loss scaling reaches the float32 weights within float16's rounding; the
    same run applying its scaled gradients (2^15 times too large) lands far from them.

    With the original's clip norm of 1.0 every step of this problem is clipped (its gradients'
    norm is above 1) and Adam's update does not depend on the gradients' scale, so the scale
    would not show; real fine-tuning often runs with gradients below the clip norm, where it
    does. The clip norm here is above every step's norm, as there.
    """
    clip = {"clip_norm": 100.0}
    float32, _ = _train(problem, tmp_path / "float32", **clip)
    half, _ = _train(problem, tmp_path / "float16", precision="mixed_float16", **clip)
    monkeypatch.setattr(loop.DynamicLossScale, "unscale", _gradients_as_scaled)
    scaled, _ = _train(problem, tmp_path / "scaled", precision="mixed_float16", **clip)
    # Mean |difference| over the variables, measured: 1.4e-4 float16 against float32, 2.9e-3
    # with the gradients left scaled.
    assert _mean_difference(half, float32) < 1.4e-3
    assert _mean_difference(scaled, float32) > 1.4e-3
