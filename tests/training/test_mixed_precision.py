"""Mixed precision in the shared loop: float16 loss scaling (skipped steps, growth, resume, two
replicas), float32 where precision matters inside the model, loss curves against float32, and
the independence of the weights from --iterations_per_loop."""

import functools
import re
import shutil
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as tf_config

from modeling import tf1_checkpoint
from tests.helpers.pretraining_records import records_dataset_fn
from tests.helpers.scripts import run_in_repo
from tests.helpers.tiny_config import TINY_CONFIG, tiny_config, tiny_train_config
from training import loop
from training.precision import DynamicLossScale
from training.strategy import create_strategy
from training.tasks import ClassifierTask, PretrainingTask

HALF = (tf.float16, tf.bfloat16)
MIXED = ("mixed_float16", "mixed_bfloat16")
INITIAL_SCALE = 2.0**15
LAYERS = TINY_CONFIG["num_hidden_layers"]


@pytest.fixture(autouse=True)
def float32_policy_after():
    """The Trainer sets the process-wide Keras policy; later tests expect float32."""
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture
def growth_interval(monkeypatch):
    """`set(n)`: Trainers built afterwards double the float16 loss scale every n good steps."""

    def set_interval(n):
        monkeypatch.setattr(
            loop, "DynamicLossScale", functools.partial(DynamicLossScale, growth_interval=n)
        )

    return set_interval


def _trainer(out_dir, precision, **overrides):
    keras.utils.set_random_seed(1)
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    train_config = tiny_train_config(out_dir, precision=precision, **overrides)
    return loop.Trainer(PretrainingTask(config), create_strategy("one_device"), train_config)


def _batches(data):
    return records_dataset_fn(data)


def _state(trainer):
    """Weights and Adam slots by position, and the step counters, as numpy values."""
    out = {"iterations": int(trainer.optimizer.iterations.numpy())}
    for i, var in enumerate(trainer.model.trainable_variables):
        out[f"w{i}"] = var.numpy()
        for suffix, slot in trainer.optimizer.slot_variables(var).items():
            out[f"{suffix}{i}"] = slot.numpy()
    return out


def _apply_step(trainer):
    """`grads -> None`: the Trainer's own unscale, clip and update, as one distributed step."""

    @tf.function
    def step(grads):
        trainer.strategy.run(trainer._clip_and_apply, args=(tf.constant(0.0), grads))

    return step


def _grads(trainer, poison=None, seed=0):
    """Random gradients for every weight, as large as those of the scaled loss (the step
    divides them by the scale); `poison` (inf or NaN) replaces one entry."""
    rng = np.random.default_rng(seed)
    scale = float(trainer.loss_scale.value.numpy())
    grads = [
        rng.normal(0.0, scale, v.shape).astype(np.float32)
        for v in trainer.model.trainable_variables
    ]
    if poison is not None:
        grads[3].flat[5] = poison
    return [tf.constant(g) for g in grads]


def _saved(prefix):
    """Everything a training checkpoint holds: weights, slots, step and `_training_state`."""
    return tf1_checkpoint.read_checkpoint(str(prefix), include_optimizer=True)


def _assert_same(a, b, keys):
    for key in keys:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_non_finite_gradients_skip_the_update_count_the_step_and_halve_the_scale(tmp_path):
    trainer = _trainer(tmp_path, "mixed_float16")
    step = _apply_step(trainer)
    scale = trainer.loss_scale
    before = _state(trainer)
    variables = [k for k in before if k != "iterations"]
    assert float(scale.value.numpy()) == INITIAL_SCALE and before["iterations"] == 0

    step(_grads(trainer, poison=np.inf))
    after_inf = _state(trainer)
    _assert_same(before, after_inf, variables)
    # Counted as the original counts a step: the schedule and a resume see it.
    assert after_inf["iterations"] == 1
    assert float(scale.value.numpy()) == INITIAL_SCALE / 2

    step(_grads(trainer, seed=1))
    after_good = _state(trainer)
    assert after_good["iterations"] == 2 and int(scale.good_steps.numpy()) == 1
    # A finite step moves every weight and slot (the schedule's rate at step 1 is not 0).
    assert all(not np.array_equal(after_inf[k], after_good[k]) for k in variables)
    assert float(scale.value.numpy()) == INITIAL_SCALE / 2

    step(_grads(trainer, poison=np.nan, seed=2))
    after_nan = _state(trainer)
    _assert_same(after_good, after_nan, variables)
    assert after_nan["iterations"] == 3
    assert float(scale.value.numpy()) == INITIAL_SCALE / 4
    assert int(scale.good_steps.numpy()) == 0

    # Halving stops at 1.
    scale.value.assign(2.0)
    for _ in range(2):
        step(_grads(trainer, poison=-np.inf))
    assert float(scale.value.numpy()) == 1.0
    assert int(trainer.optimizer.iterations.numpy()) == 5


def test_scale_doubles_after_growth_interval_finite_steps_in_a_row(tmp_path, growth_interval):
    growth_interval(3)
    trainer = _trainer(tmp_path, "mixed_float16")
    step = _apply_step(trainer)
    scale = trainer.loss_scale
    seen = []
    for poison in (None, None, np.nan, None, None, None, None, np.inf, None):
        step(_grads(trainer, poison=poison, seed=len(seen)))
        seen.append((float(scale.value.numpy()) / INITIAL_SCALE, int(scale.good_steps.numpy())))
    # A non-finite step halves the scale and restarts the count; the third finite step in a
    # row doubles the scale and restarts the count again.
    assert [scale for scale, _ in seen] == [1, 1, 0.5, 0.5, 0.5, 1, 1, 0.5, 0.5]
    assert [count for _, count in seen] == [1, 2, 0, 1, 2, 0, 1, 0, 1]
    assert int(trainer.optimizer.iterations.numpy()) == 9

    # Both parts of the state (neither at its initial value now) travel with a checkpoint.
    trainer.checkpointer.save(9)
    resumed = _trainer(tmp_path, "mixed_float16")
    assert resumed.step == 9 and int(resumed.optimizer.iterations.numpy()) == 9
    assert float(resumed.loss_scale.value.numpy()) == INITIAL_SCALE / 2
    assert int(resumed.loss_scale.good_steps.numpy()) == 1


def test_default_growth_interval_is_2000():
    assert DynamicLossScale(True).growth_interval == 2000
    with pytest.raises(ValueError, match="growth_interval must be at least 1"):
        DynamicLossScale(True, growth_interval=0)


def test_scale_state_survives_a_resume_equal_to_an_uninterrupted_run(
    data, tmp_path, growth_interval
):
    # Doubling the scale after every good step drives float16 gradients to overflow again and
    # again, so the run really skips steps on both sides of the checkpoint.
    growth_interval(1)
    settings = dict(num_train_steps=16, save_checkpoints_steps=8, log_every_steps=8)
    full = _trainer(tmp_path / "full", "mixed_float16", **settings)
    full.train(_batches(data))
    assert full.step == 16 and int(full.optimizer.iterations.numpy()) == 16
    full_dir = tmp_path / "full"
    middle, end = _saved(full_dir / "model.ckpt-8"), _saved(full_dir / "model.ckpt-16")
    scale_8 = float(middle["_training_state/loss_scale"])
    # Without a skip the scale would be 2^15 * 2^8 at step 8, and 2^8 times that at 16.
    assert scale_8 < INITIAL_SCALE * 2**8
    assert float(end["_training_state/loss_scale"]) < scale_8 * 2**8

    # A second run that finds only step 8's checkpoint in its directory resumes from there.
    (tmp_path / "resumed").mkdir()
    for path in (tmp_path / "full").glob("model.ckpt-8.*"):
        shutil.copy(path, tmp_path / "resumed")
    resumed = _trainer(tmp_path / "resumed", "mixed_float16", **settings)
    assert resumed.step == 8 and int(resumed.optimizer.iterations.numpy()) == 8
    assert scale_8 != INITIAL_SCALE and float(resumed.loss_scale.value.numpy()) == scale_8
    resumed.train(_batches(data))
    again = _saved(tmp_path / "resumed" / "model.ckpt-16")
    assert sorted(again) == sorted(end)
    for name in end:
        np.testing.assert_array_equal(again[name], end[name], err_msg=name)


@pytest.mark.slow
def test_skipped_steps_on_two_mirrored_replicas_equal_one_device(data, tmp_path):
    """The skip decision, the scale and the step count are taken once for all replicas."""
    result = tmp_path / "result.npz"
    helper = [sys.executable, "-m", "tests.helpers.train_float16_replicas", "--steps=12"]
    paths = [f"--data={data / 'data.tfrecord'}", f"--out_dir={tmp_path}", f"--result={result}"]
    done = run_in_repo(helper + paths, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = dict(np.load(result))
    assert int(runs["mirrored/replicas"]) == 2 and int(runs["one_device/replicas"]) == 1
    for name in ("mirrored", "one_device"):
        assert int(runs[f"{name}/iterations"]) == 12
        # Some steps were skipped: twelve finite ones would have doubled the scale 12 times.
        assert float(runs[f"{name}/scale"]) < INITIAL_SCALE * 2**12
    # Both replicas took every decision together: their weights, slots, scale and step agree.
    assert float(runs["mirrored/replica_gap"]) == 0.0
    assert float(runs["mirrored/scale"]) == float(runs["one_device/scale"])
    # Each replica's float16 matmuls round its half batch a little differently from the whole
    # batch on one device (measured: losses 5e-6 relative; weights 2e-4 after 12 steps, Adam
    # magnifying differences in near-zero gradients). A step applied twice, or lost, would
    # move weights by about the learning rate, 1e-3.
    np.testing.assert_allclose(runs["mirrored/losses"], runs["one_device/losses"], rtol=1e-4)
    weights = [k[len("one_device/") :] for k in runs if k.startswith("one_device/w/")]
    assert len(weights) > 30
    for key in weights:
        np.testing.assert_allclose(
            runs[f"mirrored/{key}"], runs[f"one_device/{key}"], rtol=0, atol=1e-3, err_msg=key
        )


# ----- float32 inside the model ------------------------------------------------------------


def _half_sources(tensors):
    """Ops whose reduced-precision results flow into `tensors` through float32 ops only."""
    sources, stack, seen = {}, list(tensors), set()
    while stack:
        tensor = stack.pop()
        if tensor.name in seen:
            continue
        seen.add(tensor.name)
        op = tensor.op
        if op.type == "Cast" and op.inputs[0].dtype in HALF:
            source = op.inputs[0].op
            sources[source.name] = source.type
            continue
        stack.extend(t for t in op.inputs if t.dtype == tf.float32)
    return sources


def _trace(task, features):
    """The forward pass and loss numerators of a training step, as one graph."""
    task.build_model()

    @tf.function
    def loss(features):
        return task.loss_numerators(task.forward(features, training=True))

    concrete = loss.get_concrete_function(features)
    return concrete.graph, concrete.outputs


def _features(rng, batch=2, seq=8, predictions=3):
    mask = np.ones((batch, seq), np.int32)
    mask[0, seq // 2 :] = 0
    return {
        "input_ids": tf.constant(rng.integers(1, 99, (batch, seq)) * mask, tf.int32),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.constant(np.zeros((batch, seq), np.int32)),
        "masked_lm_positions": tf.constant(rng.integers(1, 4, (batch, predictions)), tf.int32),
        "masked_lm_ids": tf.constant(rng.integers(1, 99, (batch, predictions)), tf.int32),
        "masked_lm_weights": tf.constant(np.ones((batch, predictions), np.float32)),
        "next_sentence_labels": tf.constant([[0], [1]], tf.int32),
        "label_ids": tf.constant([0, 2], tf.int32),
    }


@pytest.mark.parametrize("policy", MIXED)
def test_softmax_layer_norm_logits_and_losses_are_float32(policy):
    keras.mixed_precision.set_global_policy(policy)
    half = tf.as_dtype(policy.removeprefix("mixed_"))
    features = _features(np.random.default_rng(0))
    config = tiny_config()
    for task, logits_ops, extra_softmax in (
        (PretrainingTask(config), ["MatMul", "MatMul"], 0),
        # The classifier's predictions are a softmax of the logits too.
        (ClassifierTask(config, 3), ["MatMul"], 1),
    ):
        graph, numerators = _trace(task, features)
        ops = graph.get_operations()
        # The policy is in force: the encoder's matmuls run in the reduced precision.
        assert any(op.type == "MatMul" and op.outputs[0].dtype == half for op in ops)
        assert all(v.dtype == "float32" for v in task.model.weights)

        softmax = [op for op in ops if op.type == "Softmax"]
        assert len(softmax) == LAYERS + extra_softmax
        assert all(op.inputs[0].dtype == op.outputs[0].dtype == tf.float32 for op in softmax)

        scopes = {}
        for op in ops:
            match = re.match(r"(.*/LayerNorm[^/]*)/", op.name)
            if match:
                scopes.setdefault(match.group(1), []).append(op)
        # Embeddings, two per layer, and the masked-LM transform of the pretraining head.
        assert len(scopes) == 2 * LAYERS + 1 + (extra_softmax == 0)
        for name, scope in scopes.items():
            types = {op.type for op in scope if op.outputs and op.outputs[0].dtype == tf.float32}
            assert {"Mean", "SquaredDifference", "Rsqrt", "Mul", "AddV2"} <= types, name
            # Nothing in the normalisation is rounded (gamma and beta are read in float32):
            # the one reduced-precision value is the float32 result cast for the next matmul.
            reduced = [op for op in scope if any(o.dtype in HALF for o in op.outputs)]
            assert [op.type for op in reduced] == ["Cast"], (name, [op.name for op in reduced])
            assert reduced[0].inputs[0].dtype == tf.float32

        losses = [op for op in ops if op.type == "SparseSoftmaxCrossEntropyWithLogits"]
        assert len(losses) == len(logits_ops)
        for op in losses:
            assert op.inputs[0].dtype == tf.float32
            assert all(o.dtype == tf.float32 for o in op.outputs)
        assert all(n.dtype == tf.float32 for n in numerators)
        # From the logits on, the losses are float32 throughout: the only reduced-precision
        # values they are computed from are the outputs of the heads' projection matmuls (the
        # biases are added in float32 from float32 variables).
        assert sorted(_half_sources(numerators).values()) == logits_ops


# ----- training curves and loop structure ----------------------------------------------------


@pytest.mark.slow
def test_mixed_precision_losses_track_float32(data, tmp_path):
    steps = 200
    curves, initial = {}, {}
    for precision in ("float32", *MIXED):
        settings = dict(num_train_steps=steps, num_warmup_steps=20)
        trainer = _trainer(tmp_path / precision, precision, **settings)
        initial[precision] = {n: v.numpy() for n, v in trainer.task.variable_map().items()}
        losses = trainer.train(_batches(data))
        assert [s for s, _ in losses] == list(range(1, steps + 1))
        curves[precision] = np.array([loss for _, loss in losses])
        # Every step counted (none skipped at the default growth interval either).
        assert int(trainer.optimizer.iterations.numpy()) == steps
        # Variables and checkpoints stay float32 (weights, slots, the loss scale).
        assert all(v.dtype == "float32" for v in trainer.model.weights)
        dtypes = tf.train.load_checkpoint(trainer.checkpointer.latest()).get_variable_to_dtype_map()
        saved = {name: d for name, d in dtypes.items() if d.is_floating}
        assert any(n.endswith("/adam_v") for n in saved)
        assert set(saved.values()) == {tf.float32}, saved
    for precision in MIXED:
        for name, value in initial["float32"].items():
            np.testing.assert_array_equal(initial[precision][name], value, err_msg=name)

    reference = curves["float32"]
    windows = reference.reshape(-1, 20).mean(axis=1)
    assert windows[-1] < windows[0] - 0.8, windows  # it learned: 5.3 -> about 4.2
    for precision in MIXED:
        curve = curves[precision]
        assert not np.array_equal(curve, reference)  # computed in reduced precision indeed
        # Tolerance: bfloat16 keeps 8 significant bits, a unit roundoff of 2^-8 (0.4%). The
        # first step, from the same weights, differs by the forward pass's rounding alone:
        # within one such unit of the loss. Later the two runs follow slightly different
        # weights and the per-step gap grows with training (measured at 200 steps: largest
        # 0.64% for bfloat16, 0.22% for float16); a curve that tracks float32 stays within
        # 4 units (1.6%) at every step and within one unit on average over 20 steps
        # (measured: 0.10% and 0.06%). Both mixed policies are held to bfloat16's bound.
        unit = 2.0**-8
        assert abs(curve[0] - reference[0]) <= unit * reference[0]
        gap = np.abs(curve - reference) / reference
        assert gap.max() <= 4 * unit, (precision, gap.max(), gap.argmax())
        window_gap = np.abs(curve.reshape(-1, 20).mean(axis=1) - windows) / windows
        assert window_gap.max() <= unit, (precision, window_gap)


@pytest.fixture
def deterministic_ops():
    was_enabled = tf_config.is_op_determinism_enabled()
    tf.config.experimental.enable_op_determinism()
    yield
    if not was_enabled:
        tf_config.disable_op_determinism()


@pytest.mark.slow
def test_iterations_per_loop_leaves_the_weights_unchanged(data, tmp_path, deterministic_ops):
    runs = {}
    # Logs and saves too rare to cut a compiled call short.
    settings = dict(num_train_steps=30, log_every_steps=1000, save_checkpoints_steps=1000)
    for per_loop in (1, 7, 100):
        out_dir = tmp_path / str(per_loop)
        trainer = _trainer(out_dir, "float32", iterations_per_loop=per_loop, **settings)
        start = _state(trainer)
        losses = dict(trainer.train(_batches(data)))
        runs[per_loop] = (losses, _state(trainer))
    # The compiled calls really differ: 30 of one step, 7+7+7+7+2, and one of all 30.
    assert list(runs[1][0]) == list(range(1, 31))
    assert list(runs[7][0]) == [7, 14, 21, 28, 30]
    assert list(runs[100][0]) == [30]
    final = runs[1][1]
    assert final["iterations"] == 30
    assert not np.array_equal(final["w0"], start["w0"])
    for per_loop in (7, 100):
        losses, state = runs[per_loop]
        for step, loss in losses.items():
            assert loss == runs[1][0][step], (per_loop, step)
        _assert_same(final, state, final)
