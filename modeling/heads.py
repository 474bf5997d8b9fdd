"""Task heads on top of `BertModel`, each with the original's checkpoint variable names.

| Head | Variables (path = original checkpoint name) |
|---|---|
| `PretrainingHeads` | `cls/predictions/transform/dense/{kernel,bias}`, `cls/predictions/transform/
  LayerNorm/{gamma,beta}`, `cls/predictions/output_bias [V]` (decoder tied to the word
  embeddings), `cls/seq_relationship/output_weights [2, H]`, `cls/seq_relationship/output_bias` |
| `ClassifierHead` | `output_weights [C, H]`, `output_bias [C]` (top level, as run_classifier) |
| `SpanHead` | `cls/squad/output_weights [2, H]`, `cls/squad/output_bias [2]` |
| `TokenClassifierHead` | `cls/ner/output_weights [C, H]`, `cls/ner/output_bias [C]` (this
  project's naming; the original release has no NER head) |

Weight matrices named `output_weights` are stored `[out, in]` as in the original, unlike dense
kernels (`[in, out]`). Every head builds its variables at construction.
"""

import keras
import tensorflow as tf

from modeling.activations import get_activation
from modeling.layers import LayerNorm, dense, gather_positions, truncated_normal


class _Transform(keras.layers.Layer):
    """dense (hidden_act) + LayerNorm before the MLM decoder (scope `cls/predictions/transform`)."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = config.hidden_size
        act = get_activation(config.hidden_act)
        self.dense = dense(config.hidden_size, "dense", config.initializer_range, act)
        # Named as its checkpoint scope.
        self.layer_norm = LayerNorm(name="LayerNorm")

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.layer_norm.build((None, self.hidden_size))

    def call(self, x):
        return self.layer_norm(self.dense(x))


class MaskedLMHead(keras.layers.Layer):
    """Masked-LM head (scope `predictions`): gathers only the masked positions.

    Args:
        config: a `BertConfig`.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = config.vocab_size
        self.transform = _Transform(config, name="transform")

    def build(self, input_shape=None):
        self.transform.build()
        # Added to the float32 logits; autocast=False keeps a mixed policy from rounding it.
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros", autocast=False
        )

    def call(self, sequence_output, masked_lm_positions, embedding_table):
        """Scores the vocabulary at the masked positions.

        Args:
            sequence_output: float Tensor `[B, S, H]`, or `[B, P, H]` already at the masked
                positions when masked_lm_positions is None.
            masked_lm_positions: int Tensor `[B, P]`, or None.
            embedding_table: the encoder's word embeddings `[V, H]` (tied decoder).

        Returns:
            float32 logits `[B * P, V]`.
        """
        if masked_lm_positions is None:
            x = tf.reshape(sequence_output, [-1, tf.shape(sequence_output)[-1]])
        else:
            x = gather_positions(sequence_output, masked_lm_positions)
        x = self.transform(x)
        table = tf.cast(embedding_table, x.dtype)
        logits = tf.matmul(x, table, transpose_b=True)
        return tf.cast(logits, tf.float32) + tf.cast(self.output_bias, tf.float32)


class _OutputProjection(keras.layers.Layer):
    """`output_weights [C, H]` (stored `[out, in]`) and `output_bias [C]`: logits = x W^T + b."""

    def __init__(self, num_outputs, hidden_size, initializer_range, **kwargs):
        super().__init__(**kwargs)
        self.num_outputs = num_outputs
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights",
            shape=(self.num_outputs, self.hidden_size),
            initializer=truncated_normal(self.initializer_range),
        )
        # Added to the float32 logits; autocast=False keeps a mixed policy from rounding it.
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.num_outputs,), initializer="zeros", autocast=False
        )

    def call(self, x):
        """Args: x `[..., H]`. Returns float32 logits `[..., C]`."""
        w = tf.cast(self.output_weights, x.dtype)
        # One 2-D matmul over the rows, not tf.einsum (see SelfAttention.call).
        rows = tf.reshape(x, [-1, self.hidden_size])
        logits = tf.cast(tf.matmul(rows, w, transpose_b=True), tf.float32)
        logits = tf.reshape(logits, tf.concat([tf.shape(x)[:-1], [self.num_outputs]], 0))
        return logits + tf.cast(self.output_bias, tf.float32)


class PretrainingHeads(keras.layers.Layer):
    """Masked-LM and next-sentence heads of run_pretraining (scope `cls`).

    Example:

        heads = PretrainingHeads(config)
        out = heads(bert_out["sequence_output"], bert_out["pooled_output"], positions,
                    bert.embedding_table)
        out["masked_lm_logits"]  # [batch * max_predictions, vocab]

    Args:
        config: a `BertConfig`.
        name: "cls" gives the original variable names.
    """

    def __init__(self, config, name="cls", **kwargs):
        super().__init__(name=name, **kwargs)
        self.predictions = MaskedLMHead(config, name="predictions")
        # NSP label 0 means "B is the real next sentence", as in the original data.
        self.seq_relationship = _OutputProjection(
            2, config.hidden_size, config.initializer_range, name="seq_relationship"
        )
        self.build()

    def build(self, input_shape=None):
        self.predictions.build()
        self.seq_relationship.build()

    def call(self, sequence_output, pooled_output, masked_lm_positions, embedding_table):
        """Args: sequence_output `[B, S, H]` (`[B, P, H]` at the masked positions when
        masked_lm_positions is None); pooled_output `[B, H]`; masked_lm_positions `[B, P]` or
        None; embedding_table `[V, H]`.

        Returns:
            dict with float32 `masked_lm_logits` `[B * P, V]` and
            `next_sentence_logits` `[B, 2]`.
        """
        return {
            "masked_lm_logits": self.predictions(
                sequence_output, masked_lm_positions, embedding_table
            ),
            "next_sentence_logits": self.seq_relationship(pooled_output),
        }


class ClassifierHead(keras.layers.Layer):
    """run_classifier's head: dropout 0.1 on the pooled output (training only), then
    `output_weights [C, H]`, `output_bias [C]` at the top level of the checkpoint.

    Example:

        head = ClassifierHead(num_labels=2, config=config)
        logits = head(bert_out["pooled_output"], training=True)  # [batch, 2]

    Args:
        num_labels: number of classes C (1 for regression).
        config: a `BertConfig` (hidden size and initializer range).
        dropout_rate: the original hard-codes 0.1.
    """

    def __init__(self, num_labels, config, dropout_rate=0.1, name="classifier", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dropout = keras.layers.Dropout(dropout_rate)
        # The variables live at the top level (no scope) in original classifier checkpoints;
        # modeling/tf1_checkpoint.py maps them by attribute, not by path.
        self.projection = _OutputProjection(
            num_labels, config.hidden_size, config.initializer_range, name="output"
        )
        self.projection.build()

    def call(self, pooled_output, training=False):
        """Args: pooled_output `[B, H]` (or `[B, S, H]`). Returns float32 logits `[..., C]`."""
        return self.projection(self.dropout(pooled_output, training=training))


class SpanHead(keras.layers.Layer):
    """run_squad's head: one `[2, H]` projection of every token into start/end logits.

    Args:
        config: a `BertConfig`.
        name: "squad"; the checkpoint names are `cls/squad/output_weights|output_bias`.
    """

    def __init__(self, config, name="squad", **kwargs):
        super().__init__(name=name, **kwargs)
        self.projection = _OutputProjection(
            2, config.hidden_size, config.initializer_range, name="output"
        )
        self.projection.build()

    def call(self, sequence_output):
        """Args: sequence_output `[B, S, H]`.

        Returns:
            (start_logits, end_logits), each float32 `[B, S]`.
        """
        logits = self.projection(sequence_output)
        return logits[..., 0], logits[..., 1]


class TokenClassifierHead(ClassifierHead):
    """NER head: dropout (training only) then a `[C, H]` projection of every token.

    `ClassifierHead` applied to every position of `sequence_output` `[B, S, H]`, giving float32
    logits `[B, S, C]`. Checkpoint names (this project's): `cls/ner/output_weights [C, H]`,
    `cls/ner/output_bias`.

    Args:
        num_labels: number of tags C.
        config: a `BertConfig`.
        dropout_rate: dropout on the sequence output during training.
    """

    def __init__(self, num_labels, config, dropout_rate=0.1, name="ner", **kwargs):
        super().__init__(num_labels, config, dropout_rate, name=name, **kwargs)
