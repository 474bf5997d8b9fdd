"""The distillation loss (training/distillation.py) against a hand computation in numpy: the
temperature and its T^2 scaling, the mixing weight, examples without a gold label, NER's masked
tokens and SQuAD's start and end; and the task's own loss where a batch has no teacher outputs.
The hidden-state loss (training/hidden_states.py) likewise: real tokens, projection and layer
map by hand, exactly 0 for a student of the teacher's own first layers paired with them, and
the tasks' own terms unchanged beside it."""

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers.tiny_config import tiny_config
from training.distillation import (
    DistilledClassifierTask,
    DistilledNerTask,
    DistilledSquadTask,
    DistillSettings,
    softmax_kl,
)

B, S, C = 4, 8, 3


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _kl(teacher, student, t):
    """T^2 KL(softmax(teacher / T) || softmax(student / T)), by hand."""
    log_p, log_q = _log_softmax(teacher / t), _log_softmax(student / t)
    return t * t * (np.exp(log_p) * (log_p - log_q)).sum(-1)


def _ce(logits, labels):
    return -np.take_along_axis(_log_softmax(logits), labels[..., None], -1)[..., 0]


def _inputs(rng, lengths):
    mask = (np.arange(S)[None] < np.array(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(5, 90, (len(lengths), S)).astype(np.int32) * mask
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}


def _task(cls, settings, *args, **kwargs):
    task = cls(settings, tiny_config(hidden_dropout_prob=0.0), *args, **kwargs)
    task.build_model()
    return task


def test_softmax_kl_is_zero_on_equal_logits_and_scales_with_t_squared():
    z = np.array([[1.0, -2.0, 0.5]], np.float32)
    np.testing.assert_allclose(softmax_kl(z, z, 3.0).numpy(), [0.0], atol=1e-6)
    other = np.array([[0.0, 1.0, 2.0]], np.float32)
    for t in (1.0, 2.0, 4.0):
        np.testing.assert_allclose(softmax_kl(z, other, t).numpy(), _kl(z, other, t), rtol=1e-5)


@pytest.mark.parametrize("temperature,alpha", [(1.0, 0.5), (2.0, 0.3), (4.0, 1.0), (3.0, 0.0)])
def test_classifier_loss_by_hand(temperature, alpha):
    rng = np.random.default_rng(0)
    task = _task(DistilledClassifierTask, DistillSettings(temperature, alpha), C, dropout_rate=0.0)
    features = _inputs(rng, [8, 5, 3, 6])
    labels = np.array([0, 2, 1, 2], np.int32)
    teacher = rng.normal(0, 2, (B, C)).astype(np.float32)
    gold = np.array([1, 1, 0, 1], np.int32)  # the third has no gold label (transfer text)
    real = np.array([1, 1, 1, 0], np.int32)  # the last is padding
    aux = task.forward(
        {
            **features,
            "label_ids": labels,
            "is_real_example": real,
            "teacher_logits": teacher,
            "gold": gold,
        },
        training=False,
    )
    student = aux["logits"].numpy()
    a = np.where(gold > 0, alpha, 1.0)
    expected = a * _kl(teacher, student, temperature) + (1 - a) * _ce(student, labels)
    np.testing.assert_allclose(aux["per_example_loss"].numpy(), expected, rtol=1e-5, atol=1e-6)
    (numerator,) = task.loss_numerators(aux)
    (weight,) = task.loss_weights({**features, "is_real_example": real})
    np.testing.assert_allclose(
        float(numerator) / float(weight), (expected * real).sum() / real.sum(), rtol=1e-5
    )


def test_multi_label_and_regression_by_hand():
    rng = np.random.default_rng(1)
    features = _inputs(rng, [8, 4, 2, 7])
    t = 2.0
    task = _task(
        DistilledClassifierTask, DistillSettings(t, 0.25), C, dropout_rate=0.0, multi_label=True
    )
    labels = rng.integers(0, 2, (B, C)).astype(np.int32)
    teacher = rng.normal(0, 2, (B, C)).astype(np.float32)
    gold = np.ones([B], np.int32)
    aux = task.forward(
        {**features, "label_ids": labels, "teacher_logits": teacher, "gold": gold}, False
    )
    s = aux["logits"].numpy()

    def bernoulli_kl(p, q):
        return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))

    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    soft = t * t * bernoulli_kl(sig(teacher / t), sig(s / t)).mean(-1)
    hard = (-(labels * np.log(sig(s)) + (1 - labels) * np.log(1 - sig(s)))).mean(-1)
    np.testing.assert_allclose(
        aux["per_example_loss"].numpy(), 0.25 * soft + 0.75 * hard, rtol=1e-4, atol=1e-6
    )

    task = _task(DistilledClassifierTask, DistillSettings(t, 0.6), 1, is_regression=True)
    targets = rng.normal(0, 1, [B]).astype(np.float32)
    teacher = rng.normal(0, 1, (B, 1)).astype(np.float32)
    aux = task.forward(
        {**features, "label_ids": targets, "teacher_logits": teacher, "gold": gold}, False
    )
    score = aux["logits"].numpy()[:, 0]
    # Regression has no temperature: the squared distance from the teacher's score.
    expected = 0.6 * (score - teacher[:, 0]) ** 2 + 0.4 * (score - targets) ** 2
    np.testing.assert_allclose(aux["per_example_loss"].numpy(), expected, rtol=1e-5)


def test_ner_loss_counts_labelled_tokens_only():
    rng = np.random.default_rng(2)
    t, alpha = 2.0, 0.7
    task = _task(DistilledNerTask, DistillSettings(t, alpha), C, dropout_rate=0.0)
    lengths = [8, 6, 4, 3]
    features = _inputs(rng, lengths)
    labels = np.full((B, S), -1, np.int32)
    for row, n in enumerate(lengths):
        # Some first pieces labelled: [CLS], [SEP], other pieces and padding are not.
        for position in range(1, n - 1, 2):
            labels[row, position] = rng.integers(0, C)
    teacher = rng.normal(0, 2, (B, S, C)).astype(np.float32)
    gold = np.array([1, 0, 1, 1], np.int32)
    aux = task.forward(
        {**features, "label_ids": labels, "teacher_logits": teacher, "gold": gold}, False
    )
    s = aux["logits"].numpy()
    mask = labels >= 0
    a = np.where(gold > 0, alpha, 1.0)[:, None]
    per_token = a * _kl(teacher, s, t) + (1 - a) * _ce(s, np.maximum(labels, 0))
    (numerator,) = task.loss_numerators(aux)
    (weight,) = task.loss_weights({**features, "label_ids": labels})
    assert float(weight) == mask.sum()
    np.testing.assert_allclose(float(numerator), (per_token * mask).sum(), rtol=1e-5)


def test_ner_reads_teacher_logits_of_a_cut_batch():
    """A batch cut to its longest sequence keeps the stored logits at full length."""
    rng = np.random.default_rng(3)
    task = _task(DistilledNerTask, DistillSettings(1.0, 1.0), C, dropout_rate=0.0)
    features = _inputs(rng, [5, 3, 4, 5])
    cut = {k: v[:, :5] for k, v in features.items()}
    labels = np.where(cut["input_mask"] > 0, 0, -1).astype(np.int32)
    teacher = rng.normal(0, 2, (B, S, C)).astype(np.float32)
    aux = task.forward({**cut, "label_ids": labels, "teacher_logits": teacher}, False)
    s = aux["logits"].numpy()
    expected = (_kl(teacher[:, :5], s, 1.0) * (labels >= 0)).sum()
    np.testing.assert_allclose(float(task.loss_numerators(aux)[0]), expected, rtol=1e-5)


def test_squad_loss_takes_start_and_end():
    rng = np.random.default_rng(4)
    t, alpha = 3.0, 0.4
    task = _task(DistilledSquadTask, DistillSettings(t, alpha))
    features = _inputs(rng, [8, 7, 6, 8])
    starts = np.array([1, 2, 0, 3], np.int32)
    ends = np.array([2, 4, 0, 3], np.int32)
    teacher = rng.normal(0, 2, (B, 2, S)).astype(np.float32)
    aux = task.forward(
        {
            **features,
            "start_positions": starts,
            "end_positions": ends,
            "teacher_logits": teacher,
            "gold": np.ones([B], np.int32),
        },
        False,
    )
    expected = []
    for index, (side, positions) in enumerate((("start", starts), ("end", ends))):
        s = aux[f"{side}_logits"].numpy()
        expected.append(
            (alpha * _kl(teacher[:, index], s, t) + (1 - alpha) * _ce(s, positions)).sum()
        )
    numerators = [float(n) for n in task.loss_numerators(aux)]
    np.testing.assert_allclose(numerators, expected, rtol=1e-5)
    assert [float(w) for w in task.loss_weights(features)] == [2.0 * B, 2.0 * B]


def test_batches_without_teacher_outputs_keep_the_task_loss():
    """Evaluation batches: the task's own loss (the gold labels')."""
    rng = np.random.default_rng(5)
    task = _task(DistilledClassifierTask, DistillSettings(2.0, 0.5), C, dropout_rate=0.0)
    features = _inputs(rng, [8, 5, 3, 6])
    labels = np.array([0, 2, 1, 2], np.int32)
    aux = task.forward({**features, "label_ids": labels}, training=False)
    np.testing.assert_allclose(
        aux["per_example_loss"].numpy(), _ce(aux["logits"].numpy(), labels), rtol=1e-5
    )
    assert tf.is_tensor(aux["logits"])


# ----- the hidden-state loss (training/hidden_states.py) -------------------------------------


def _teacher_checkpoint(tmp_path, config, num_labels=C):
    """A classifier teacher's checkpoint of `config`, new weights; (prefix, arrays)."""
    from modeling import tf1_checkpoint
    from training.tasks import ClassifierTask

    teacher = ClassifierTask(config, num_labels)
    teacher.build_model()
    arrays = tf1_checkpoint.variables_to_arrays(teacher.variable_map())
    prefix = tf1_checkpoint.save_tf1_checkpoint(arrays, str(tmp_path / "teacher" / "model.ckpt"))
    return prefix, arrays


def _hidden_task(teacher_config, prefix, student_config, pairs, weight, cls=None, args=(C,)):
    """A student task (a classifier's by default) with the hidden-state loss."""
    from training.hidden_states import HiddenStateLoss

    settings = DistillSettings(2.0, 0.5, hidden_weight=weight, hidden_pairs=pairs)
    hidden = HiddenStateLoss(teacher_config, prefix, pairs, weight)
    kwargs = {"dropout_rate": 0.0} if args else {}
    cls = cls or DistilledClassifierTask
    task = cls(settings, student_config, *args, hidden=hidden, **kwargs)
    task.build_model()
    return task


def _teacher_states(teacher_config, prefix, features):
    """The teacher's hidden states by a model of its own, loaded from its checkpoint."""
    from modeling import BertModel
    from modeling.task_models import hidden_states_of
    from modeling.tf1_checkpoint import load_tf1_checkpoint

    bert = BertModel(teacher_config)
    load_tf1_checkpoint(prefix, bert_model=bert)
    return [h.numpy() for h in hidden_states_of(bert(features, training=False))]


def test_hidden_loss_by_hand(tmp_path):
    """A student half the teacher's width: projection, layer map and real tokens by hand."""
    from training.hidden_states import HIDDEN_LOSS

    rng = np.random.default_rng(6)
    teacher_config = tiny_config(num_hidden_layers=4, hidden_dropout_prob=0.0)
    student_config = tiny_config(hidden_size=16, intermediate_size=24, hidden_dropout_prob=0.0)
    prefix, _ = _teacher_checkpoint(tmp_path, teacher_config)
    pairs = ((0, 0), (1, 3), (2, 4))
    task = _hidden_task(teacher_config, prefix, student_config, pairs, 0.7)
    features = _inputs(rng, [8, 5, 3, 6])
    real = np.array([1, 1, 1, 0], np.int32)
    batch = {
        **features,
        "label_ids": np.array([0, 2, 1, 2], np.int32),
        "is_real_example": real,
        "teacher_logits": rng.normal(0, 2, (B, C)).astype(np.float32),
    }
    aux = task.forward(batch, training=False)

    _, student = task.model(features, training=False, hidden_states=True)
    kernel, bias = (v.numpy() for v in task.hidden.trainable_variables())
    assert kernel.shape == (16, 32) and bias.shape == (32,)
    teacher = _teacher_states(teacher_config, prefix, features)
    tokens = features["input_mask"] * real[:, None]
    squared = [((student[s].numpy() @ kernel + bias - teacher[t]) ** 2).mean(-1) for s, t in pairs]
    expected = 0.7 * (sum(squared) / len(pairs) * tokens).sum() / tokens.sum()
    numerators = task.loss_numerators(aux)
    weights = task.loss_weights(batch)
    assert len(numerators) == len(weights) == len(task.loss_epsilons) == 2
    assert float(weights[1]) == tokens.sum() == 8 + 5 + 3
    np.testing.assert_allclose(float(aux[HIDDEN_LOSS]) / float(weights[1]), expected, rtol=1e-5)
    # The projection trains with the student and is kept as training state, not as a weight.
    names = [n for n in task.variable_map() if "hidden_projection" in n]
    assert names == [
        "_training_state/hidden_projection/kernel",
        "_training_state/hidden_projection/bias",
    ]
    assert task.trainable_variables()[-2:] == task.hidden.trainable_variables()
    assert not task.hidden.teacher.trainable_variables
    # Evaluation batches (no teacher outputs): the term is 0 over 1, the task's loss alone.
    plain = {k: v for k, v in batch.items() if k != "teacher_logits"}
    assert float(task.loss_numerators(task.forward(plain, False))[1]) == 0.0
    assert float(task.loss_weights(plain)[1]) == 1.0


@pytest.mark.parametrize("packed", [False, True])
def test_student_of_the_teachers_first_layers_matches_it_exactly(tmp_path, packed):
    """A student of teacher layers 0 and 1 (same width, no dropout), paired with them: its
    hidden-state loss is exactly 0 at its first training step, on the real tokens alone too."""
    from data.records.batching import _token_positions
    from modeling import tf1_checkpoint
    from modeling.student_layers import parse_layer_map, student_arrays
    from training.hidden_states import HIDDEN_LOSS

    rng = np.random.default_rng(7)
    no_dropout = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    teacher_config = tiny_config(num_hidden_layers=3, **no_dropout)
    prefix, arrays = _teacher_checkpoint(tmp_path, teacher_config)
    pairs = parse_layer_map("embeddings:embeddings,0:0,1:1", 2, 3)
    task = _hidden_task(teacher_config, prefix, tiny_config(**no_dropout), pairs, 1.0)
    assert task.hidden.projection is None and task.trainable_variables() == (
        task.model.trainable_variables
    )
    tf1_checkpoint.assign_arrays(task.variable_map(), student_arrays(arrays, (0, 1)))
    features = _inputs(rng, [8, 5, 3, 6])
    if packed:
        features["token_positions"] = _token_positions(features["input_mask"], 1, S)[0]
    batch = {
        **features,
        "label_ids": np.array([0, 2, 1, 2], np.int32),
        "teacher_logits": rng.normal(0, 2, (B, C)).astype(np.float32),
    }
    aux = task.forward(batch, training=True)
    assert float(aux[HIDDEN_LOSS]) == 0.0
    # The default map pairs student layer 1 with teacher layer 2, which it is not.
    task.hidden.pairs = parse_layer_map(None, 2, 3)
    assert task.hidden.pairs == ((0, 0), (1, 2), (2, 3))
    assert float(task.forward(batch, training=True)[HIDDEN_LOSS]) > 0.0


@pytest.mark.parametrize("student_class", [DistilledNerTask, DistilledSquadTask])
def test_token_tasks_add_the_hidden_term_and_keep_their_own(tmp_path, student_class):
    """NER and SQuAD students: the task's loss exactly as without the hidden states, plus the
    term; a student with all of the teacher's weights matches it exactly (identity map)."""
    from modeling import tf1_checkpoint
    from modeling.student_layers import even_layer_map
    from training.hidden_states import HIDDEN_LOSS

    rng = np.random.default_rng(8)
    config = tiny_config(hidden_dropout_prob=0.0)
    prefix, arrays = _teacher_checkpoint(tmp_path, config)
    args = (C,) if student_class is DistilledNerTask else ()
    kwargs = {"dropout_rate": 0.0} if args else {}
    plain = _task(student_class, DistillSettings(2.0, 0.5), *args, **kwargs)
    task = _hidden_task(config, prefix, config, even_layer_map(2, 2), 1.0, student_class, args)
    # The teacher's encoder; the task head (none in a classifier's checkpoint) as the plain
    # student's.
    tf1_checkpoint.assign_arrays(plain.variable_map(), arrays, strict=False)
    weights = tf1_checkpoint.variables_to_arrays(plain.variable_map())
    tf1_checkpoint.assign_arrays(task.variable_map(), weights)
    features = _inputs(rng, [8, 5, 3, 6])
    if args:
        labels = np.where(features["input_mask"] > 0, 1, -1).astype(np.int32)
        batch = {**features, "label_ids": labels, "teacher_logits": np.zeros((B, S, C), "f")}
    else:
        positions = np.array([1, 2, 1, 3], np.int32)
        batch = {
            **features,
            "start_positions": positions,
            "end_positions": positions + 1,
            "teacher_logits": rng.normal(0, 2, (B, 2, S)).astype(np.float32),
        }
    expected, aux = plain.forward(batch, False), task.forward(batch, False)
    assert set(aux) == {*expected, HIDDEN_LOSS}
    for key, value in expected.items():
        np.testing.assert_array_equal(aux[key].numpy(), value.numpy(), err_msg=key)
    assert float(aux[HIDDEN_LOSS]) == 0.0
    assert len(task.loss_numerators(aux)) == len(plain.loss_numerators(expected)) + 1
