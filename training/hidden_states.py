"""The hidden-state loss of a distillation: the student's hidden states matched to the teacher's.

A teacher's hidden states are L + 1 `[S, H]` arrays per example, too many to store beside the
training records as its logits are (`data.records.teacher_outputs`), so the teacher's encoder
runs live in each training step, as in DistilBERT and TinyBERT: frozen (not trainable, no
dropout, in no optimizer and no checkpoint of the student's), on the same batch as the student
(cut to the same length, on the same real tokens). Hidden state 0 is the embeddings' output,
hidden state k the output of layer k - 1 (`modeling.task_models.hidden_states_of`); a layer map
pairs the student's with the teacher's (`modeling.student_layers.parse_layer_map`).

Where the widths differ, the student's states go through one learned dense projection
`[H_student, H_teacher]` (with a bias), shared by every pair (TinyBERT's W_h). It trains with the
student and is saved in its `model.ckpt-N` under `_training_state/hidden_projection/` (with its
optimizer slots), so a resumed run restores it, and every reader of weights (export_model.py,
convert_checkpoint.py, --init_checkpoint, `best_checkpoint/`) leaves it out: the student's
folder stays a run of its runner.

The loss is `w` times the mean, over the batch's real tokens (`input_mask`, of real examples),
over the pairs and over the teacher's width, of the squared difference:

    w / (P * H_teacher) * sum_tokens sum_pairs |proj(student_s) - teacher_t|^2 / count(tokens)

added to the task's loss as a term of its own (numerator here, the token count its weight), so
that replicas and accumulation micro-batches sum to the whole global batch's loss.
"""

import tensorflow as tf

from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.layers import dense, weights_from_checkpoint
from modeling.task_models import hidden_states_of

HIDDEN_LOSS = "hidden_loss"
PROJECTION = tf1_checkpoint.TRAINING_STATE_PREFIX + "hidden_projection"
_TEACHER_INPUTS = ("input_ids", "input_mask", "segment_ids", "token_positions")


class HiddenStateLoss:
    """The frozen teacher encoder, the projection and the hidden-state loss of a student task.

    Args:
        teacher_config: the teacher's `BertConfig`.
        teacher_checkpoint: the teacher's checkpoint prefix (its encoder is loaded strictly).
        pairs: (student, teacher) hidden-state numbers (0 the embeddings, k layer k - 1).
        weight: `w` (> 0).
    """

    def __init__(self, teacher_config, teacher_checkpoint, pairs, weight):
        self.teacher_config = teacher_config
        self.teacher_checkpoint = teacher_checkpoint
        self.pairs = tuple(pairs)
        self.weight = weight
        self.teacher = None
        self.projection = None

    def build(self, student_config):
        """Creates the teacher's encoder (its weights loaded) and, where the widths differ, the
        projection; call inside the strategy scope, after the student's model."""
        # Every teacher variable is assigned from its checkpoint right away: no draws.
        with weights_from_checkpoint():
            self.teacher = BertModel(self.teacher_config, name="teacher_bert")
        self.teacher.trainable = False
        tf1_checkpoint.assign_arrays(
            tf1_checkpoint.encoder_variable_map(self.teacher),
            tf1_checkpoint.read_checkpoint(self.teacher_checkpoint),
            self.teacher_checkpoint,
        )
        width = self.teacher_config.hidden_size
        if student_config.hidden_size != width:
            self.projection = dense(width, "hidden_projection", student_config.initializer_range)
            self.projection.build((None, None, student_config.hidden_size))

    def variable_map(self):
        """The projection's checkpoint names -> variables (none without a projection)."""
        if self.projection is None:
            return {}
        return {
            f"{PROJECTION}/kernel": self.projection.kernel,
            f"{PROJECTION}/bias": self.projection.bias,
        }

    def trainable_variables(self):
        """The projection's variables, trained with the student's."""
        return list(self.variable_map().values())

    @staticmethod
    def token_weights(features):
        """float32 `[B, S]`: 1 at the real tokens of real examples, else 0."""
        mask = tf.cast(features["input_mask"], tf.float32)
        real = features.get("is_real_example")
        if real is not None:
            mask *= tf.reshape(tf.cast(real, tf.float32), [-1, 1])
        return mask

    def token_count(self, features):
        """The loss term's weight: the batch's real tokens, float32 `[]`."""
        return tf.reduce_sum(self.token_weights(features))

    def loss_sum(self, features, student_states):
        """The loss term's numerator over a batch.

        Args:
            features: the batch (its inputs, as the student read them).
            student_states: the student's L_s + 1 hidden states `[B, S, H_student]`.

        Returns:
            float32 `[]`: `w / (P * H_teacher)` times the sum of the squared differences at
            the real tokens.
        """
        inputs = {key: features[key] for key in _TEACHER_INPUTS if key in features}
        teacher_states = hidden_states_of(self.teacher(inputs, training=False))
        mask = self.token_weights(features)
        total = 0.0
        for s, t in self.pairs:
            student = student_states[s]
            if self.projection is not None:
                student = self.projection(student)
            # Computed in the policy's dtype; the difference and its sum in float32.
            teacher = tf.cast(tf.stop_gradient(teacher_states[t]), tf.float32)
            squared = tf.square(tf.cast(student, tf.float32) - teacher)
            total += tf.reduce_sum(tf.reduce_mean(squared, axis=-1) * mask)
        return self.weight / len(self.pairs) * total
