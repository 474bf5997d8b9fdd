"""The embedding block: word + token-type + position tables, LayerNorm, dropout."""

import keras
import tensorflow as tf

from modeling.layers import LayerNorm, truncated_normal


class BertEmbeddings(keras.layers.Layer):
    """Sums word, token-type and absolute position embeddings, then LayerNorm and dropout.

    Variables (checkpoint scope `bert/embeddings`): `word_embeddings` `[V, H]`,
    `token_type_embeddings` `[T, H]`, `position_embeddings` `[P, H]`, `LayerNorm/{gamma,beta}`.
    Positions are always 0..S-1 (the first S rows of the table), independent of the mask.

    Args:
        config: a validated `BertConfig`.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        # Named as its checkpoint scope.
        self.layer_norm = LayerNorm(name="LayerNorm")
        self.dropout = keras.layers.Dropout(config.hidden_dropout_prob)

    def build(self, input_shape=None):
        c = self.config
        init = truncated_normal(c.initializer_range)
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(c.vocab_size, c.hidden_size), initializer=init
        )
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(c.type_vocab_size, c.hidden_size), initializer=init
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(c.max_position_embeddings, c.hidden_size),
            initializer=init,
        )
        self.layer_norm.build((None, None, c.hidden_size))

    def call(self, input_ids, segment_ids, training=False):
        """Embeds a batch.

        Args:
            input_ids: int32 Tensor `[B, S]`.
            segment_ids: int32 Tensor `[B, S]`, values in [0, type_vocab_size).
            training: whether dropout is active.

        Returns:
            float Tensor `[B, S, H]`, the original's `embedding_output`.
        """
        seq_length = input_ids.shape[1]
        if seq_length is not None and seq_length > self.config.max_position_embeddings:
            raise ValueError(
                f"Sequence length {seq_length} exceeds max_position_embeddings "
                f"({self.config.max_position_embeddings}) of the model; use "
                f"--max_seq_length <= {self.config.max_position_embeddings}."
            )
        # A gather equals the original's one-hot matmul for token types exactly: each output is
        # one row times 1.0 plus zeros.
        x = tf.gather(self.word_embeddings, input_ids)
        x += tf.gather(self.token_type_embeddings, segment_ids)
        x += self.position_embeddings[: tf.shape(input_ids)[1]][tf.newaxis]
        x = self.layer_norm(x)
        return self.dropout(x, training=training)
