"""The fixed-shape path a TPU needs, run on the CPU: inference padded to whole batches gives the
outputs of the variable-shape path (one row per example, in order), every batch has one static
shape, the training, evaluation and prediction steps compile with XLA, and the TPU flags reach
TensorFlow's resolver."""

import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from data.glue.records import classifier_dataset, write_classifier_tfrecord
from data.ner.records import ner_dataset, write_ner_tfrecord
from data.records.input_pipeline import Batching, pretraining_dataset
from data.squad.records import squad_dataset, write_squad_tfrecord
from tests.helpers.pretraining_records import write_records
from tests.helpers.tiny_config import TINY_CONFIG, tiny_config, tiny_train_config
from training.loop import Trainer
from training.strategy import create_strategy
from training.tasks import ClassifierTask, NerTask, PretrainingTask, SquadTask

SEQ = 12


def _rows(count, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        length = int(rng.integers(4, SEQ + 1))
        mask = [1] * length + [0] * (SEQ - length)
        ids = [int(x) for x in rng.integers(5, TINY_CONFIG["vocab_size"], SEQ)]
        rows.append(
            types.SimpleNamespace(
                unique_id=1000 + i,
                input_ids=[x * m for x, m in zip(ids, mask, strict=True)],
                input_mask=mask,
                segment_ids=[0] * SEQ,
                label_id=i % 3,
                is_real_example=True,
                label_ids=[(x % 4) if m else -1 for x, m in zip(ids, mask, strict=True)],
            )
        )
    return rows


def _files(tmp_path):
    rows = _rows(11, 0)  # 11 examples: batches of 4 leave a short last one
    paths = {name: str(tmp_path / f"{name}.tf_record") for name in ("cls", "ner", "squad")}
    write_classifier_tfrecord(rows, paths["cls"], is_regression=False)
    write_ner_tfrecord(rows, paths["ner"])
    write_squad_tfrecord(rows, paths["squad"], is_training=False)
    return {
        "classifier": (
            lambda: ClassifierTask(tiny_config(), 3),
            lambda b: classifier_dataset(paths["cls"], SEQ, False, 4, False, batching=b),
        ),
        "ner": (
            lambda: NerTask(tiny_config(), 4),
            lambda b: ner_dataset(paths["ner"], SEQ, 4, False, batching=b),
        ),
        "squad": (
            lambda: SquadTask(tiny_config()),
            lambda b: squad_dataset(paths["squad"], SEQ, 4, False, batching=b),
        ),
    }


@pytest.mark.parametrize("task_name", ["classifier", "ner", "squad"])
def test_padded_inference_equals_variable_shapes(tmp_path, task_name):
    make_task, dataset_fn = _files(tmp_path)[task_name]
    # The padded batches are whole and statically shaped.
    spec = dataset_fn(Batching(pad_to_whole_batches=True)).element_spec
    assert all(s.shape.is_fully_defined() and s.shape[0] == 4 for s in spec.values())
    outputs = {}
    for pad in (False, True):
        keras.utils.set_random_seed(5)
        config = tiny_train_config(tmp_path / f"run{pad}", pad_to_whole_batches=pad)
        trainer = Trainer(make_task(), create_strategy("one_device"), config)
        assert trainer.plan.whole_inference_batches is pad
        outputs[pad] = trainer.predict(dataset_fn)
    for name, value in outputs[False].items():
        assert len(value) == 11, name
        np.testing.assert_allclose(outputs[True][name], value, rtol=0, atol=1e-6, err_msg=name)
    if task_name == "squad":
        assert outputs[True]["unique_ids"].tolist() == list(range(1000, 1011))


def _compiled_steps(trainer):
    task = trainer.task

    @tf.function(jit_compile=True)
    def train_step(features):
        return trainer._replica_step(features, trainer._micro_loss_and_grads)

    @tf.function(jit_compile=True)
    def eval_step(features):
        aux = task.forward(features, training=False)
        return task.loss_numerators(aux), task.metric_sums(aux)

    @tf.function(jit_compile=True)
    def predict_step(features):
        return task.forward(features, training=False)["mlm_logits"]

    return train_step, eval_step, predict_step


def _float16_trainer(tmp_path, name):
    keras.utils.set_random_seed(2)
    config = tiny_train_config(
        tmp_path / name, precision="mixed_float16", use_xla=True, num_warmup_steps=0
    )
    return Trainer(PretrainingTask(tiny_config()), create_strategy("one_device"), config)


@pytest.mark.slow
def test_static_shape_steps_compile_with_xla(tmp_path):
    """Training, evaluation and prediction replica steps under jit_compile=True with static
    shapes: no host-side Python, string tensors or ops XLA cannot compile (a TPU's needs), and
    the compiled steps compute what the same steps compute without XLA."""
    data = tmp_path / "data.tfrecord"
    write_records(data, num_examples=32)
    batching = Batching(pad_to_whole_batches=False, background=False)
    train = pretraining_dataset([str(data)], 32, 5, 8, True, seed=1, batching=batching)
    assert all(s.shape.is_fully_defined() for s in train.element_spec.values())
    batch = next(iter(train))
    # float16 has the most in the step (loss scaling, the finite check, the skip branch); the
    # float32 step compiles whole under --use_xla in tests/training/test_loop.py.
    trainer = _float16_trainer(tmp_path, "compiled")
    reference = _float16_trainer(tmp_path, "eager")
    task = reference.task
    before = [v.numpy() for v in trainer.model.trainable_variables]
    np.testing.assert_array_equal(before[0], reference.model.trainable_variables[0].numpy())
    train_step, eval_step, predict_step = _compiled_steps(trainer)
    # Compiled against op by op, from the same weights, float16 rounding apart. Measured:
    # logits 1.8e-4, loss numerators and the step's loss 2e-6 relative, weights after the
    # update 4.7e-5 typically. Adam's first step moves a weight by lr * g / (|g| + eps) with
    # lr = 1e-3: where a gradient is near eps, float16 rounding of g moves that one weight by
    # a good part of lr (5.8e-4 seen in one element of 1024 in full-suite runs), so single
    # weights are held to lr and the whole update to its mean. A wrong step (skipped, other
    # sign, unscaled) moves most weights by lr or more.
    logits = task.forward(batch, training=False)["mlm_logits"]
    np.testing.assert_allclose(predict_step(batch), logits, atol=2e-3)
    numerators, _ = eval_step(batch)
    expected = task.loss_numerators(task.forward(batch, training=False))
    np.testing.assert_allclose(numerators, expected, rtol=2e-5)
    loss = train_step(batch)
    eager_loss = reference._replica_step(batch, reference._micro_loss_and_grads)
    np.testing.assert_allclose(float(loss), float(eager_loss), rtol=2e-5)
    after = [v.numpy() for v in trainer.model.trainable_variables]
    assert any(np.abs(a - b).max() > 1e-4 for a, b in zip(after, before, strict=True))
    for compiled, eager in zip(after, reference.model.trainable_variables, strict=True):
        np.testing.assert_allclose(compiled, eager.numpy(), atol=1e-3)
        assert np.abs(compiled - eager.numpy()).mean() < 5e-5
    # The compiled graphs are XLA clusters, not a fallback to the op-by-op runtime.
    for fn in (train_step, eval_step, predict_step):
        assert fn.experimental_get_compiler_ir(batch)(stage="hlo")


class _FakeResolver:
    calls = []

    def __init__(self, tpu=None, zone=None, project=None):
        _FakeResolver.calls.append({"tpu": tpu, "zone": zone, "project": project})


def _fake_tpu(monkeypatch, cores):
    _FakeResolver.calls.clear()
    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", _FakeResolver)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", lambda resolver: None)
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", lambda resolver: None)
    monkeypatch.setattr(
        tf.distribute,
        "TPUStrategy",
        lambda resolver: types.SimpleNamespace(num_replicas_in_sync=cores),
    )


class _Flags(types.SimpleNamespace):
    """Parsed flag values as the runners see them: attributes, and `present` by name."""

    def __getitem__(self, name):
        return types.SimpleNamespace(present=name in self.given)


def test_tpu_flags_reach_the_resolver(monkeypatch):
    from command_line import flags as runner_flags

    _fake_tpu(monkeypatch, cores=8)
    flags = _Flags(
        use_tpu=True,
        strategy="one_device",
        num_gpus=None,
        num_cpu_devices=2,
        tpu_name=None,
        master="grpc://10.0.0.2:8470",
        tpu_zone="us-central1-b",
        gcp_project="my-project",
        num_tpu_cores=32,
        multi_worker_timeout=5.0,
        collective_timeout=None,
        given=set(),
    )
    strategy = runner_flags.strategy_from_flags(flags)
    assert strategy.num_replicas_in_sync == 8
    # --master stands for the TPU when --tpu_name is not given, as in the original.
    assert _FakeResolver.calls == [
        {"tpu": "grpc://10.0.0.2:8470", "zone": "us-central1-b", "project": "my-project"}
    ]
    # --num_tpu_cores given on the command line is checked against the TPU.
    flags.given.add("num_tpu_cores")
    with pytest.raises(ValueError, match="--num_tpu_cores=32 but the TPU .* has 8 cores"):
        runner_flags.strategy_from_flags(flags)
    flags.tpu_name, flags.num_tpu_cores = "my-tpu", 8
    runner_flags.strategy_from_flags(flags)
    assert _FakeResolver.calls[-1]["tpu"] == "my-tpu"


def test_variable_shapes_refused_where_replicas_need_static_ones():
    fake = types.SimpleNamespace(
        num_replicas_in_sync=4, extended=types.SimpleNamespace(worker_devices=["/cpu:0"] * 2)
    )
    from training.distributed_input import pad_to_whole_batches

    assert pad_to_whole_batches(fake) is True  # 4 replicas on 2 local devices: two workers
    with pytest.raises(ValueError, match="--pad_to_whole_batches=false cannot be used"):
        pad_to_whole_batches(fake, requested=False)


def _tpu_strategy():
    """An object of TensorFlow's own TPUStrategy class, as `create_strategy("tpu")` returns on
    a TPU (built without one: only its type is read by the decisions under test)."""
    strategy = object.__new__(tf.distribute.TPUStrategy)
    assert isinstance(strategy, tf.distribute.TPUStrategy)
    return strategy


@pytest.mark.parametrize("make_task", [lambda c: ClassifierTask(c, 3), PretrainingTask])
def test_a_tpu_runs_full_length_whole_batches(make_task, tmp_path):
    """The plan the Trainer uses, on a TPUStrategy: every batch at the full length, no real-token
    packing, whole evaluation and prediction batches; variable shapes refused."""
    from training.batch_plan import plan_batches
    from training.distributed_input import pad_to_whole_batches

    task = make_task(tiny_config())
    config = tiny_train_config(tmp_path)
    plan = plan_batches(_tpu_strategy(), task, config)
    assert not plan.cut_to_length and not plan.real_tokens_only
    assert plan.whole_inference_batches
    assert plan.training().token_slots == 0 and not plan.training().cut_to_length
    assert plan.prediction().pad_to_whole_batches and plan.prediction().sort_batches == 0
    with pytest.raises(ValueError, match="--pad_to_whole_batches=false cannot be used"):
        pad_to_whole_batches(_tpu_strategy(), requested=False)
    # The same task and settings on one CPU device: cut, and (classifier) real tokens only.
    here = plan_batches(create_strategy("one_device"), task, config)
    assert here.cut_to_length and not here.whole_inference_batches
    assert here.real_tokens_only is task.real_tokens_only
