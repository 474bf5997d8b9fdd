"""Tests for modeling/optimization.py.

The oracle is the original `bert.optimization` (bert-tensorflow) run in tf.compat.v1 graph
mode. Its `create_optimizer` takes a loss, so the oracle graph uses
`loss = sum(reduce_sum(var * g))` with `g` fed per step: the gradient of that loss is exactly
`g`, which lets both sides see the same gradients through the original's whole training op
(schedule, global-norm clipping, AdamWeightDecayOptimizer, global-step increment).
LAMB has no original; it is checked against Model Garden's LAMB (a child process).
"""

import functools

import keras
import numpy as np
import pytest
import tensorflow as tf
from bert import optimization as original

from modeling import optimization
from modeling.decoupled_decay import DecoupledDecayOptimizer
from tests.oracles.tf1_graph import read_global_step_before_increment

_SHAPES = {
    "layer/kernel": (4, 3),
    "layer/bias": (3,),
    "layer/LayerNorm/gamma": (3,),
    "cls/output_weights": (2, 3),
}
_DECAYED = {"layer/kernel", "cls/output_weights"}


def _decayed(optimizer, variable):
    """What AdamWeightDecay.update_step decides: a nonzero rate and no exclusion pattern."""
    return bool(optimizer.weight_decay_rate) and not optimizer.is_excluded(variable)


def _keras_variable(path, value):
    """A keras.Variable whose `path` is `path` (e.g. "layer/LayerNorm/gamma")."""
    *scopes, leaf = path.split("/")
    if not scopes:
        return keras.Variable(value, name=leaf)
    with keras.name_scope(scopes[0]):
        return _keras_variable("/".join(scopes[1:] + [leaf]), value)


def _random_problem(num_steps, seed=0):
    """Initial values and per-step gradients; every third step is small enough not to clip."""
    rng = np.random.RandomState(seed)
    init = {k: rng.normal(size=s).astype(np.float32) for k, s in _SHAPES.items()}
    scales = [0.05 if i % 3 == 0 else 1.0 for i in range(num_steps)]
    grads = [
        {k: (scale * rng.normal(size=s)).astype(np.float32) for k, s in _SHAPES.items()}
        for scale in scales
    ]
    return init, grads


def _run_original(init, grads, init_lr, num_train_steps, num_warmup_steps):
    """Runs bert.optimization.create_optimizer's train op; returns per-step variable values."""
    graph = tf.Graph()
    with graph.as_default():
        params = {k: tf.compat.v1.get_variable(k, initializer=v) for k, v in init.items()}
        feeds = {k: tf.compat.v1.placeholder(tf.float32, _SHAPES[k]) for k in _SHAPES}
        loss = tf.add_n([tf.reduce_sum(params[k] * feeds[k]) for k in _SHAPES])
        train_op = original.create_optimizer(
            loss, init_lr, num_train_steps, num_warmup_steps, use_tpu=False
        )
        read_global_step_before_increment(graph)
        fetch = {v.name[: -len(":0")]: v for v in tf.compat.v1.global_variables()}
        history = []
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step_grads in grads:
                sess.run(train_op, {feeds[k]: step_grads[k] for k in _SHAPES})
                history.append(sess.run(fetch))
    return history


def _run_keras(init, grads, optimizer):
    """Applies `grads` with `optimizer` inside a tf.function; returns variables and history."""
    params = {k: _keras_variable(k, v) for k, v in init.items()}
    keys = list(_SHAPES)
    var_list = [params[k] for k in keys]
    optimizer.build(var_list)

    @tf.function
    def apply(step_grads):
        optimizer.apply(step_grads, var_list)

    history = []
    for step_grads in grads:
        apply([tf.constant(step_grads[k]) for k in keys])
        state = {k: params[k].numpy() for k in keys}
        for k in keys:
            index = optimizer._get_variable_index(params[k])
            state[k + "/adam_m"] = optimizer._adam_m[index].numpy()
            state[k + "/adam_v"] = optimizer._adam_v[index].numpy()
        history.append(state)
    return params, history


def test_adamw_matches_original_training_op():
    init_lr, num_train_steps, num_warmup_steps = 0.05, 20, 5
    init, grads = _random_problem(num_train_steps)
    global_norms = [np.sqrt(sum(np.sum(g**2) for g in step.values())) for step in grads]
    assert min(global_norms) < 1.0 < max(global_norms), "clipping must trigger on some steps only"

    expected = _run_original(init, grads, init_lr, num_train_steps, num_warmup_steps)
    assert expected[-1]["global_step"] == num_train_steps
    optimizer = optimization.create_optimizer(init_lr, num_train_steps, num_warmup_steps)
    params, actual = _run_keras(init, grads, optimizer)

    assert int(optimizer.iterations.numpy()) == num_train_steps
    for step, (want, got) in enumerate(zip(expected, actual, strict=True)):
        for name, value in got.items():
            np.testing.assert_allclose(value, want[name], rtol=0, atol=1e-6, err_msg=f"{step=}")
    for name in _SHAPES:
        assert np.abs(params[name].numpy() - init[name]).max() > 0.1, name
        assert _decayed(optimizer, params[name]) == (name in _DECAYED), name


def test_weight_decay_touches_exactly_the_non_excluded_variables():
    """Without decay, excluded variables still follow the original; decayed ones drift."""
    init, grads = _random_problem(10, seed=1)
    expected = _run_original(init, grads, 0.05, 10, 2)[-1]
    optimizer = optimization.create_optimizer(0.05, 10, 2, weight_decay_rate=0.0)
    params, _ = _run_keras(init, grads, optimizer)
    for name in _SHAPES:
        diff = np.abs(params[name].numpy() - expected[name]).max()
        if name in _DECAYED:
            assert diff > 1e-4, name
        else:
            assert diff <= 1e-6, name


def test_exclusion_rule_matches_original():
    names = [
        "bert/embeddings/word_embeddings",
        "bert/embeddings/LayerNorm/beta",
        "bert/encoder/layer_0/attention/output/LayerNorm/gamma",
        "bert/encoder/layer_0/attention/self/query/kernel",
        "bert/encoder/layer_11/output/dense/bias",
        "bert/pooler/dense/kernel",
        "cls/predictions/output_bias",
        "cls/seq_relationship/output_weights",
        "output_weights",
        "output_bias",
        "encoder/layer_norm/scale",
    ]
    exclusions = ["LayerNorm", "layer_norm", "bias"]
    oracle = original.AdamWeightDecayOptimizer(0.1, 0.01, exclude_from_weight_decay=exclusions)
    ours = optimization.AdamWeightDecay(
        0.1, 0.01, exclude_from_weight_decay=exclusions, name_fn=lambda name: name
    )
    got = [_decayed(ours, n) for n in names]
    assert got == [oracle._do_use_weight_decay(n) for n in names]
    assert sum(got) == 5
    no_decay = optimization.AdamWeightDecay(0.1, exclude_from_weight_decay=exclusions)
    assert not _decayed(no_decay, keras.Variable([1.0], name="kernel"))


def test_original_adam_case():
    """optimization_test.py's test_adam: plain AdamWeightDecay converges on a quadratic."""
    w = keras.Variable([0.1, -0.2, -0.1], name="w")
    x = tf.constant([0.4, 0.2, -0.5])
    optimizer = optimization.AdamWeightDecay(learning_rate=0.2)
    for _ in range(100):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x - w))
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
    np.testing.assert_allclose(w.numpy(), x.numpy(), rtol=1e-2, atol=1e-2)


def _original_learning_rates(monkeypatch, init_lr, num_train_steps, num_warmup_steps, steps):
    """The rate tensor that bert.optimization.create_optimizer hands to its optimizer."""
    captured = {}
    apply_gradients = original.AdamWeightDecayOptimizer.apply_gradients

    def recording_apply_gradients(self, *args, **kwargs):
        captured["lr"] = self.learning_rate
        return apply_gradients(self, *args, **kwargs)

    monkeypatch.setattr(
        original.AdamWeightDecayOptimizer, "apply_gradients", recording_apply_gradients
    )
    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.get_variable("w", initializer=[1.0])
        original.create_optimizer(
            tf.reduce_sum(w), init_lr, num_train_steps, num_warmup_steps, False
        )
        global_step = tf.compat.v1.train.get_global_step()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            values = []
            for step in steps:
                global_step.load(step, sess)
                values.append(sess.run(captured["lr"]))
    return np.array(values, dtype=np.float32)


@pytest.mark.parametrize(
    "init_lr, num_train_steps, num_warmup_steps",
    [(0.05, 20, 5), (5e-5, 1000, 100), (1e-4, 997, 331), (3e-5, 37, 0), (1e-4, 7, 3)],
)
def test_schedule_matches_original(monkeypatch, init_lr, num_train_steps, num_warmup_steps):
    n, w = num_train_steps, num_warmup_steps
    steps = list(range(n + 6))
    want = _original_learning_rates(monkeypatch, init_lr, n, w, steps)
    schedule = optimization.WarmupLinearDecay(init_lr, n, w)
    all_steps = tf.constant(steps, tf.int64)
    np.testing.assert_array_equal(schedule(all_steps).numpy(), want, err_msg="eager")
    np.testing.assert_array_equal(tf.function(schedule)(all_steps).numpy(), want, "tf.function")
    for step in {0, 1, max(w - 1, 0), w, n - 1, n, n + 5}:
        assert schedule(tf.constant(step, tf.int64)).numpy() == want[step], step
    # XLA may fuse a multiply-add and change the last bit, but never the sign or the zeros.
    xla = tf.function(schedule, jit_compile=True)(all_steps).numpy()
    np.testing.assert_allclose(xla, want, rtol=0, atol=1e-7 * init_lr)
    assert (xla >= 0).all() and (xla[n:] == 0).all()

    assert want[0] == (0.0 if w else np.float32(init_lr))
    assert want[n] == 0.0 and want[n + 5] == 0.0
    if w:
        np.testing.assert_allclose(want[w - 1], init_lr * (w - 1) / w, rtol=1e-6)
        # The original's jump at the end of warmup is kept.
        np.testing.assert_allclose(want[w], init_lr * (1 - w / n), rtol=1e-6)


@pytest.mark.parametrize("init_lr, num_warmup_steps", [(-2e-3, 5), (1e-3, -3), (-1e-3, -1)])
def test_settings_the_original_ran_give_its_rates(monkeypatch, init_lr, num_warmup_steps):
    """A negative rate (the updates climb the loss) and a negative warmup (none) are rarely
    meant, but the original's graph ran them: the runners warn, and the rates stay its own."""
    n, steps = 20, list(range(26))
    want = _original_learning_rates(monkeypatch, init_lr, n, num_warmup_steps, steps)
    schedule = optimization.WarmupLinearDecay(init_lr, n, num_warmup_steps)
    got = schedule(tf.constant(steps, tf.int64)).numpy()
    np.testing.assert_array_equal(got, want)
    assert np.sign(want[:n]).tolist().count(np.sign(init_lr)) >= n - max(num_warmup_steps, 1)
    # The optimizer takes them as the original's create_optimizer did.
    optimization.create_optimizer(init_lr, n, num_warmup_steps)


@pytest.mark.parametrize("wd", [0.1, 0.0])
def test_lamb_matches_model_garden(wd, tmp_path):
    """Our LAMB against Model Garden's (official.modeling.optimization.lamb, run in a child
    process) on the same six steps of gradients: decay and layer adaptation on the kernels,
    plain bias-corrected Adam on the excluded LayerNorm and bias, a trust ratio of 1 for a
    variable whose norm is zero."""
    from tests.oracles import run_oracle

    rng = np.random.RandomState(2)
    init = {
        "dense/kernel": rng.normal(size=(5, 4)).astype(np.float32),
        "dense/bias": rng.normal(size=(4,)).astype(np.float32),
        "LayerNorm/gamma": rng.normal(size=(4,)).astype(np.float32),
        "zero/kernel": np.zeros((3,), np.float32),
    }
    grads = [
        {k: rng.normal(size=v.shape).astype(np.float32) for k, v in init.items()} for _ in range(6)
    ]
    lr = 0.01
    problem = {f"init/{k}": v for k, v in init.items()}
    for step, step_grads in enumerate(grads):
        problem.update({f"grad/{step}/{k}": g for k, g in step_grads.items()})
    np.savez(tmp_path / "problem.npz", **problem)
    run_oracle(
        "model_garden_lamb",
        [
            f"--problem={tmp_path / 'problem.npz'}",
            f"--out={tmp_path / 'want.npz'}",
            f"--learning_rate={lr}",
            f"--weight_decay_rate={wd}",
            "--exclude=LayerNorm,bias",
        ],
    )
    want = dict(np.load(tmp_path / "want.npz"))

    params = {k: _keras_variable(k, v) for k, v in init.items()}
    optimizer = optimization.Lamb(
        lr, weight_decay_rate=wd, exclude_from_weight_decay=["LayerNorm", "bias"]
    )
    for step_grads in grads:
        optimizer.apply_gradients([(tf.constant(step_grads[k]), params[k]) for k in init])
    for k in init:
        # Measured: up to 9.5e-7 apart.
        np.testing.assert_allclose(params[k].numpy(), want[k], rtol=1e-5, atol=1e-5, err_msg=k)
    # Layer adaptation acted on the kernel: without it the same steps end elsewhere.
    plain = _keras_variable("dense/kernel", init["dense/kernel"])
    adam = optimization.Lamb(lr, weight_decay_rate=wd, exclude_from_weight_decay=["kernel"])
    for step_grads in grads:
        adam.apply_gradients([(tf.constant(step_grads["dense/kernel"]), plain)])
    # Measured: 6e-2 apart.
    assert np.abs(plain.numpy() - want["dense/kernel"]).max() > 1e-2


def test_lamb_excluded_variable_is_plain_adam():
    """With one step, bias-corrected Adam moves every excluded entry by lr * g/(|g|+eps)."""
    g = np.array([0.3, -2.0, 1e-3], np.float32)
    bias = _keras_variable("dense/bias", np.array([1.0, 2.0, 3.0], np.float32))
    optimizer = optimization.create_optimizer(0.1, 10, 0, optimizer_type="lamb", clip_norm=None)
    assert isinstance(optimizer, optimization.Lamb)
    optimizer.apply_gradients([(tf.constant(g), bias)])
    expected = np.array([1.0, 2.0, 3.0]) - 0.1 * g / (np.abs(g) + 1e-6)
    np.testing.assert_allclose(bias.numpy(), expected, rtol=1e-6)


def test_mirrored_strategy_matches_single_device():
    init, grads = _random_problem(4, seed=3)
    _, single = _run_keras(init, grads, optimization.create_optimizer(0.05, 4, 1))
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    keys = list(_SHAPES)
    with strategy.scope():
        params = [_keras_variable(k, init[k]) for k in keys]
        optimizer = optimization.create_optimizer(0.05, 4, 1)
        optimizer.build(params)

    def replica_step(step_grads):
        # As in training, the gradients are computed on the replica: d(sum(p * g))/dp = g.
        with tf.GradientTape() as tape:
            loss = tf.add_n([tf.reduce_sum(p * g) for p, g in zip(params, step_grads, strict=True)])
        optimizer.apply(tape.gradient(loss, params), params)

    @tf.function
    def train_step(step_grads):
        strategy.run(replica_step, args=(step_grads,))

    for step_grads in grads:
        train_step([tf.constant(step_grads[k]) for k in keys])
    for k, p in zip(keys, params, strict=True):
        np.testing.assert_allclose(p.numpy(), single[-1][k], rtol=0, atol=1e-6, err_msg=k)


def _fit(optimizer_type, jit_compile):
    """A small Keras model fitted for 8 steps with our optimizer; returns (model, optimizer,
    the initial weights)."""
    keras.utils.set_random_seed(6)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, name="dense"), keras.layers.LayerNormalization()]
    )
    optimizer = optimization.create_optimizer(0.01, 8, 2, optimizer_type=optimizer_type)
    model.compile(optimizer=optimizer, loss="mse", jit_compile=jit_compile)
    before = [v.numpy() for v in model.trainable_variables]
    rng = np.random.RandomState(4)
    model.fit(rng.rand(32, 4), rng.rand(32, 3), epochs=2, batch_size=8, verbose=0, shuffle=False)
    return model, optimizer, before


@pytest.mark.parametrize("optimizer_type", ["adamw", "lamb"])
def test_model_fit_with_xla(optimizer_type):
    """model.fit compiled with XLA trains as without it (schedule, decay, clipping in the
    compiled step)."""
    model, optimizer, before = _fit(optimizer_type, jit_compile=True)
    plain, _, plain_before = _fit(optimizer_type, jit_compile=False)
    assert int(optimizer.iterations.numpy()) == 8
    decayed = [_decayed(optimizer, v) for v in model.trainable_variables]
    assert decayed == [True, False, False, False]  # kernel, bias, gamma, beta
    variables = (model.trainable_variables, plain.trainable_variables, before, plain_before)
    for compiled, eager, start, eager_start in zip(*variables, strict=True):
        np.testing.assert_array_equal(start, eager_start)
        assert np.abs(compiled.numpy() - start).max() > 1e-2  # trained
        # Measured: 2.4e-7 apart at most.
        np.testing.assert_allclose(compiled.numpy(), eager.numpy(), atol=2e-6)


def test_serialization_round_trip():
    optimizer = optimization.create_optimizer(2e-5, 100, 10, weight_decay_rate=0.02)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(restored) is optimization.AdamWeightDecay
    assert restored.get_config() == optimizer.get_config()
    schedule = restored._learning_rate
    assert isinstance(schedule, optimization.WarmupLinearDecay)
    assert float(schedule(5)) == float(optimizer._learning_rate(5))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(optimizer_type="sgd"), r"unknown optimizer_type 'sgd'.*\['adamw', 'lamb'\]"),
        (dict(num_train_steps=0), "num_train_steps must be >= 1, got 0"),
        (dict(num_train_steps=-5), "num_train_steps must be >= 1"),
        (dict(num_train_steps=10.0), "num_train_steps must be an integer"),
        (dict(num_warmup_steps=2.5), "num_warmup_steps must be an integer"),
        (dict(init_lr=float("nan")), "init_lr must be a finite number"),
        (dict(weight_decay_rate=-0.1), "weight_decay_rate must be"),
        (dict(clip_norm=0.0), "clip_norm must be a finite number > 0"),
    ],
)
def test_create_optimizer_rejects_bad_input(kwargs, message):
    args = dict(init_lr=1e-4, num_train_steps=100, num_warmup_steps=10) | kwargs
    with pytest.raises(ValueError, match=message):
        optimization.create_optimizer(**args)


def test_conflicting_keras_arguments_are_rejected():
    with pytest.raises(ValueError, match="weight_decay_rate"):
        optimization.AdamWeightDecay(0.1, weight_decay=0.01)
    with pytest.raises(ValueError, match="global_clipnorm"):
        optimization.Lamb(0.1, clip_norm=1.0, global_clipnorm=1.0)
    with pytest.raises(ValueError, match="constructor"):
        optimization.AdamWeightDecay(0.1).exclude_from_weight_decay(var_names=["bias"])


def _published_adam(init, grads, lr, weight_decay_rate, excluded, beta_1=0.9, beta_2=0.999):
    """Adam as published (Kingma & Ba, Algorithm 1) in float64, with the original's decoupled
    decay added to the step: `p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p)`."""
    params = {k: v.astype(np.float64) for k, v in init.items()}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    history = []
    for t, step_grads in enumerate(grads, start=1):
        for k, g in step_grads.items():
            m[k] = beta_1 * m[k] + (1 - beta_1) * g
            v[k] = beta_2 * v[k] + (1 - beta_2) * g.astype(np.float64) ** 2
            m_hat, v_hat = m[k] / (1 - beta_1**t), v[k] / (1 - beta_2**t)
            update = m_hat / (np.sqrt(v_hat) + 1e-6)
            if k not in excluded:
                update += weight_decay_rate * params[k]
            params[k] = params[k] - lr * update
        history.append(dict(params))
    return history


@pytest.mark.parametrize("compiled", [False, True])
def test_bias_correction_is_published_adam(compiled):
    """--adam_bias_correction: the fused kernel's step (and the op-by-op reference the compiled
    path uses) equal Adam's published update with the original's decoupled decay."""
    init, grads = _random_problem(8, seed=5)
    optimizer = optimization.AdamWeightDecay(
        1e-2,
        weight_decay_rate=0.01,
        exclude_from_weight_decay=list(optimization.DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY),
        bias_correction=True,
    )
    if compiled:
        # The op-by-op form, as the base class runs it in one compiled pass.
        optimizer.update_step = functools.partial(DecoupledDecayOptimizer.update_step, optimizer)
    _, actual = _run_keras(init, grads, optimizer)
    expected = _published_adam(init, grads, 1e-2, 0.01, set(_SHAPES) - _DECAYED)
    for step, (want, got) in enumerate(zip(expected, actual, strict=True)):
        for name in _SHAPES:
            np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-6, err_msg=f"{step=}")
    # The correction matters at these steps: the uncorrected optimizer ends elsewhere.
    _, plain = _run_keras(init, grads, optimization.AdamWeightDecay(1e-2, weight_decay_rate=0.01))
    assert max(np.abs(plain[-1][k] - expected[-1][k]).max() for k in _SHAPES) > 1e-3


def test_create_optimizer_bias_correction_flag():
    assert not optimization.create_optimizer(1e-4, 10, 1).bias_correction
    on = optimization.create_optimizer(1e-4, 10, 1, adam_bias_correction=True)
    assert on.bias_correction and on.get_config()["bias_correction"]
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(on))
    assert restored.bias_correction
