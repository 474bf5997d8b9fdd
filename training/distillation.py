"""Knowledge distillation on the shared loop: a student task whose loss reads a teacher's outputs.

The teacher's logits are computed once, before the student trains, and stored beside the
training records (`data.records.teacher_outputs`); each training batch then carries them as
`teacher_logits`, and `gold` says which examples have a gold label (the task's training data)
and which have none (unlabelled transfer text). Each example's (token's, answer end's) loss is

    a * T^2 * KL(softmax(z_teacher / T) || softmax(z_student / T)) + (1 - a) * gold_loss

with `a` = `alpha` where there is a gold label and 1 where there is none (Hinton et al. 2015:
the T^2 keeps the soft targets' gradients on the scale of the gold labels' as T changes). The
KL divergence is the soft cross-entropy less the teacher's entropy: the same gradients, and 0
when the student matches the teacher. Multi-label tasks take the KL divergence of each label's
Bernoulli distribution (sigmoid), averaged over the labels; regression the squared difference
from the teacher's score (no temperature).

`gold_loss` is the task's own loss (`training.tasks`: class weights included) and the loss
keeps the task's terms and their denominators: the mean over the real examples (classifier),
the labelled tokens (NER) or twice the batch (SQuAD's start and end). Evaluation and prediction
batches carry no teacher outputs and are the task's own.

With `hidden_weight` > 0 the student also matches the teacher's hidden states, a loss term of
its own (`training.hidden_states`: the teacher's encoder runs in the training step); at 0 the
task is exactly the one without it.
"""

import dataclasses

import tensorflow as tf

from training.hidden_states import HIDDEN_LOSS
from training.tasks import ClassifierTask, NerTask, SquadTask

TEACHER_LOGITS = "teacher_logits"
GOLD = "gold"


@dataclasses.dataclass(frozen=True)
class DistillSettings:
    """How the student learns from the teacher: the flags of the same names.

    Attributes:
        temperature: T, dividing both models' logits before the softmax (sigmoid).
        alpha: the soft targets' weight `a` in an example with a gold label (1 - alpha: the
            gold label's); examples without one learn from the soft targets alone.
        hidden_weight: the hidden-state loss's weight (`--hidden_loss_weight`); 0: none.
        hidden_pairs: (student, teacher) hidden-state numbers it matches (0 the embeddings,
            k layer k - 1; `--hidden_layer_map`).
    """

    temperature: float = 2.0
    alpha: float = 0.5
    hidden_weight: float = 0.0
    hidden_pairs: tuple = ()


def softmax_kl(teacher_logits, student_logits, temperature):
    """`T^2 * KL(softmax(teacher / T) || softmax(student / T))` over the last axis.

    Args:
        teacher_logits: float `[..., C]`.
        student_logits: float `[..., C]`.
        temperature: T > 0.

    Returns:
        float32 `[...]`.
    """
    log_p = tf.nn.log_softmax(tf.cast(teacher_logits, tf.float32) / temperature)
    log_q = tf.nn.log_softmax(tf.cast(student_logits, tf.float32) / temperature)
    return temperature**2 * tf.reduce_sum(tf.exp(log_p) * (log_p - log_q), axis=-1)


def sigmoid_kl(teacher_logits, student_logits, temperature):
    """`T^2` times the KL divergence of each label's Bernoulli distribution (sigmoid of the
    logits over T), averaged over the last axis (the labels).

    Args:
        teacher_logits: float `[..., L]`.
        student_logits: float `[..., L]`.
        temperature: T > 0.

    Returns:
        float32 `[...]`.
    """
    t = tf.cast(teacher_logits, tf.float32) / temperature
    s = tf.cast(student_logits, tf.float32) / temperature
    p = tf.sigmoid(t)
    # Cross-entropy against the student less the teacher's own entropy.
    kl = tf.nn.sigmoid_cross_entropy_with_logits(p, s) - tf.nn.sigmoid_cross_entropy_with_logits(
        p, t
    )
    return temperature**2 * tf.reduce_mean(kl, axis=-1)


def mixed(soft, gold_loss, gold, alpha):
    """`a * soft + (1 - a) * gold_loss`, `a` = alpha where `gold` > 0, else 1.

    Args:
        soft: float32 `[...]`, the soft targets' loss.
        gold_loss: `[...]`, the gold labels' loss (ignored where `gold` is 0).
        gold: `[...]` (or broadcastable): 1 for an example with a gold label, 0 without.
        alpha: the soft targets' weight where there is a gold label.
    """
    a = tf.where(tf.cast(gold, tf.float32) > 0, alpha, 1.0)
    gold_loss = tf.where(a < 1.0, tf.cast(gold_loss, tf.float32), 0.0)
    return a * soft + (1.0 - a) * gold_loss


def _gold(features):
    gold = features.get(GOLD)
    if gold is None:
        return tf.ones([tf.shape(features["input_ids"])[0]], tf.float32)
    return tf.reshape(tf.cast(gold, tf.float32), [-1])


class _Distilled:
    """The student's side, mixed into a task class: `forward` on a batch with teacher outputs
    turns the task's loss into the distillation loss (see the module docstring).

    Args:
        settings: `DistillSettings`.
        *args, **kwargs: the task class's own.
        hidden: None, or a `training.hidden_states.HiddenStateLoss` (with `hidden_weight` >
            0): one more loss term, the hidden states'. Batches without teacher outputs give
            it 0 over a weight of 1.
    """

    def __init__(self, settings, *args, hidden=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.distill = settings
        self.hidden = hidden
        if hidden is not None:
            self.loss_epsilons = (*self.loss_epsilons, 0.0)

    def build_model(self, gradient_checkpointing=False):
        model = super().build_model(gradient_checkpointing)
        if self.hidden is not None:
            self.hidden.build(self.config)
        return model

    def variable_map(self):
        extra = self.hidden.variable_map() if self.hidden is not None else {}
        return {**super().variable_map(), **extra}

    def trainable_variables(self):
        extra = self.hidden.trainable_variables() if self.hidden is not None else []
        return [*super().trainable_variables(), *extra]

    def loss_weights(self, features):
        weights = super().loss_weights(features)
        if self.hidden is None:
            return weights
        if TEACHER_LOGITS not in features:
            return [*weights, tf.constant(1.0)]
        return [*weights, self.hidden.token_count(features)]

    def loss_numerators(self, aux):
        terms = super().loss_numerators(aux)
        if self.hidden is None:
            return terms
        return [*terms, aux.get(HIDDEN_LOSS, tf.constant(0.0))]

    def forward(self, features, training):
        if TEACHER_LOGITS not in features:
            return super().forward(features, training)
        if self.hidden is None:
            aux = super().forward(features, training)
            return self.distilled(aux, features[TEACHER_LOGITS], _gold(features))
        outputs, states = self.model(features, training=training, hidden_states=True)
        aux = self.distilled(
            self.aux_of(outputs, features), features[TEACHER_LOGITS], _gold(features)
        )
        return {**aux, HIDDEN_LOSS: self.hidden.loss_sum(features, states)}

    def distilled(self, aux, teacher_logits, gold):
        """The task's `aux` with its loss replaced by the distillation loss."""
        raise NotImplementedError


class _TeacherOutputs:
    """The teacher's side, mixed into a task class: prediction gives what the student reads,
    `teacher_logits` in the layout `stored_shape` names."""

    def prediction_outputs(self, aux):
        return {TEACHER_LOGITS: self.logits_of(aux)}


class _ClassifierLogits:
    def logits_of(self, aux):
        return aux["logits"]

    def stored_shape(self, max_seq_length):
        """The shape of one example's stored teacher logits."""
        return (self.num_labels,)


class _NerLogits:
    def logits_of(self, aux):
        return aux["logits"]

    def stored_shape(self, max_seq_length):
        return (max_seq_length, self.num_labels)


class _SquadLogits:
    def logits_of(self, aux):
        return tf.stack([aux["start_logits"], aux["end_logits"]], axis=1)

    def stored_shape(self, max_seq_length):
        return (2, max_seq_length)


class DistilledClassifierTask(_Distilled, _ClassifierLogits, ClassifierTask):
    """`ClassifierTask` trained on a teacher's logits (softmax, sigmoid or the score)."""

    def distilled(self, aux, teacher_logits, gold):
        student, settings = aux["logits"], self.distill
        if self.is_regression:
            soft = tf.square(tf.cast(student[:, 0], tf.float32) - teacher_logits[:, 0])
        elif self.multi_label:
            soft = sigmoid_kl(teacher_logits, student, settings.temperature)
        else:
            soft = softmax_kl(teacher_logits, student, settings.temperature)
        loss = mixed(soft, aux["per_example_loss"], gold, settings.alpha)
        return {**aux, "per_example_loss": loss}


class DistilledNerTask(_Distilled, _NerLogits, NerTask):
    """`NerTask` trained on a teacher's tag logits at the labelled tokens."""

    def distilled(self, aux, teacher_logits, gold):
        student = aux["logits"]
        # Batches may be cut to their longest sequence; the stored logits are not.
        teacher = teacher_logits[:, : tf.shape(student)[1]]
        soft = softmax_kl(teacher, student, self.distill.temperature)
        token_loss = aux["labelled"] * mixed(
            soft, aux["token_loss"], gold[:, tf.newaxis], self.distill.alpha
        )
        return {**aux, "token_loss": token_loss}


class DistilledSquadTask(_Distilled, _SquadLogits, SquadTask):
    """`SquadTask` trained on a teacher's start and end logits (each over all positions)."""

    def distilled(self, aux, teacher_logits, gold):
        out = dict(aux)
        for index, side in enumerate(("start", "end")):
            soft = softmax_kl(
                teacher_logits[:, index], aux[f"{side}_logits"], self.distill.temperature
            )
            out[f"{side}_loss"] = mixed(soft, aux[f"{side}_loss"], gold, self.distill.alpha)
        return out


class ClassifierTeacher(_TeacherOutputs, _ClassifierLogits, ClassifierTask):
    """`ClassifierTask` whose prediction is its logits `[B, C]`."""


class NerTeacher(_TeacherOutputs, _NerLogits, NerTask):
    """`NerTask` whose prediction is its logits `[B, S, C]`."""


class SquadTeacher(_TeacherOutputs, _SquadLogits, SquadTask):
    """`SquadTask` whose prediction is its start and end logits `[B, 2, S]`."""


STUDENTS = {
    ClassifierTask: DistilledClassifierTask,
    NerTask: DistilledNerTask,
    SquadTask: DistilledSquadTask,
}
TEACHERS = {ClassifierTask: ClassifierTeacher, NerTask: NerTeacher, SquadTask: SquadTeacher}
