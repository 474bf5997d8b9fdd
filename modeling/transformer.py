"""One post-LayerNorm Transformer layer, named as the original's checkpoint scopes.

Scope layout of layer i (each name below is a Keras layer of the same name):

    layer_i/attention/self/{query,key,value}
    layer_i/attention/output/{dense,LayerNorm}
    layer_i/intermediate/dense
    layer_i/output/{dense,LayerNorm}
"""

import contextlib
import math

import keras
import tensorflow as tf

from modeling.activations import get_activation
from modeling.layers import Dropout, LayerNorm, dense


def attention_bias_from_mask(input_mask, dtype=tf.float32):
    """Turns a padding mask into the additive bias the original adds to attention scores.

    Only keys are masked: padded query positions are still computed, as in the original.

    Args:
        input_mask: int Tensor `[B, T]`, 1 for real tokens, 0 for padding.
        dtype: dtype of the result.

    Returns:
        Tensor `[B, 1, 1, T]`: 0 where attended, -10000 where masked (not -inf, as the original).
    """
    # expand_dims rather than a new-axis slice: TFLite has no kernel for the latter with
    # dynamic shapes, and the int8 export (serving.lite) keeps batch and length dynamic.
    mask = tf.expand_dims(tf.expand_dims(tf.cast(input_mask, dtype), 1), 1)
    return (1.0 - mask) * -10000.0


class RealTokens:
    """Moves the real tokens of a padded batch into one list `[T, D]` and back to `[B, S, D]`.

    Every part of a layer except attention treats each token on its own, so it can run on the
    real tokens only; attention needs the `[B, S]` layout and gets it for the duration of the
    score computation. Padding positions come back as zeros; as keys they are masked by the
    attention bias as in the original, and their own outputs are not defined (the original
    computes them from padding; nothing that reads only real positions can tell).

    Both moves are gathers, and each one's gradient is the other move (a gather too, where
    TensorFlow's own gradient of a gather is a single-threaded segment sum on CPUs: 4-9% of a
    step); gathers run for every dtype on every device.

    Args:
        input_mask: int Tensor `[B, S]`, 1 for real tokens.
        positions: int Tensor `[T]`: the flat positions (`b * S + s`) of the real tokens, then
            `B * S` for unused slots (a T fixed in advance keeps the shapes static for XLA;
            `token_positions` of `data.records.batching`). Unused slots carry a copy of the
            last position; nothing reads them back.
    """

    def __init__(self, input_mask, positions):
        shape = tf.shape(input_mask)
        self.batch, self.length = shape[0], shape[1]
        self.rows = rows = self.batch * self.length
        positions = tf.cast(positions, tf.int32)
        slots = tf.shape(positions)[0]
        self.take_rows = tf.minimum(positions, rows - 1)
        self.used = positions < rows  # [T]
        # For every position of [B, S], its slot, or `slots` (a zero row) for padding. The
        # unused slots all land in an extra row, dropped.
        slot_of = tf.scatter_nd(positions[:, tf.newaxis], tf.range(slots) - slots, [rows + 1])
        self.spread_rows = slot_of[:rows] + slots

    def _take(self, x):
        return tf.gather(tf.reshape(x, [self.rows, -1]), self.take_rows)

    @staticmethod
    def _slots(x, slots):
        # Rows of the packed x; slot T (one past the last) reads as a zero row.
        return tf.gather(tf.pad(x, [[0, 1], [0, 0]]), slots)

    def _spread(self, x):
        rows = self._slots(x, self.spread_rows)
        return tf.reshape(rows, [self.batch, self.length, tf.shape(x)[-1]])

    def rows_at(self, x, positions):
        """Packed `[T, D]` -> `[B, R, D]`: the rows at `positions` (int `[B, R]`, sequence
        positions of each example; zeros where one is padding)."""
        flat = tf.cast(positions, tf.int32) + self.length * tf.range(self.batch)[:, tf.newaxis]
        return self._slots(x, tf.gather(self.spread_rows, flat))

    def pack(self, x):
        """`[B, S, D]` -> `[T, D]`, the real positions in row-major order."""

        @tf.custom_gradient
        def move(x):
            return self._take(x), self._spread

        return move(x)

    def unpack(self, x):
        """`[T, D]` -> `[B, S, D]`, zeros at padding positions."""

        @tf.custom_gradient
        def move(x):
            def gradient(dy):
                return self._take(dy) * tf.cast(self.used, dy.dtype)[:, tf.newaxis]

            return self._spread(x), gradient

        return move(x)


class SelfAttention(keras.layers.Layer):
    """Multi-head self-attention with separate query/key/value projections (scope `self`).

    Each projection is a full `[H, H]` kernel; head h uses output columns h*d..(h+1)*d-1.
    Scores are Q.K^T multiplied by 1/sqrt(d) after the matmul, masked additively, soft-maxed over
    keys, and dropped out with `attention_probs_dropout_prob`.

    Args:
        config: a validated `BertConfig`.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        init = config.initializer_range
        self.query = dense(config.hidden_size, "query", init)
        self.key = dense(config.hidden_size, "key", init)
        self.value = dense(config.hidden_size, "value", init)
        self.dropout = Dropout(config.attention_probs_dropout_prob)

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value):
            layer.build(input_shape)

    def _split_heads(self, x):
        """`[B, S, H]` -> `[B, N, S, d]`."""
        shape = tf.shape(x)
        x = tf.reshape(x, [shape[0], shape[1], self.num_heads, self.head_size])
        return tf.transpose(x, [0, 2, 1, 3])

    def call(self, x, attention_bias, training=False, real_tokens=None, queries=None):
        """Args: x `[B, S, H]` (or `[T, H]` with a `RealTokens`); attention_bias
        `[B, 1, 1, S]`; queries: `[B, R, H]` rows that attend instead of every position of
        x. Returns the layout of queries if given, else of x."""
        q = self.query(x if queries is None else queries)
        k, v = self.key(x), self.value(x)
        if real_tokens is not None:
            k, v = real_tokens.unpack(k), real_tokens.unpack(v)
            if queries is None:
                q = real_tokens.unpack(q)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        # Batched matmuls over [B, N], as the original, not tf.einsum: TensorFlow 2.20's oneDNN
        # Einsum kernel on CPUs now and then writes past its buffers when batches change shape
        # (docs/when_something_goes_wrong.md, "Crashes on CPUs").
        scores = tf.matmul(q, k, transpose_b=True)  # [B, N, F, T]
        scores = scores * (1.0 / math.sqrt(float(self.head_size)))
        # Softmax in float32 so that mixed precision never saturates the -10000 bias.
        scores = tf.cast(scores, tf.float32) + tf.cast(attention_bias, tf.float32)
        probs = tf.cast(tf.nn.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.dropout(probs, training=training)
        context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])  # [B, F, N, d]
        shape = tf.shape(context)
        context = tf.reshape(context, [shape[0], shape[1], self.num_heads * self.head_size])
        return real_tokens.pack(context) if real_tokens is not None and queries is None else context


class DenseResidualNorm(keras.layers.Layer):
    """dense -> dropout -> add residual -> LayerNorm (scopes `attention/output` and `output`).

    Args:
        config: a validated `BertConfig`.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = config.hidden_size
        self.dense = dense(config.hidden_size, "dense", config.initializer_range)
        self.dropout = Dropout(config.hidden_dropout_prob)
        # Named as its checkpoint scope.
        self.layer_norm = LayerNorm(name="LayerNorm")

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.layer_norm.build(tuple(input_shape[:-1]) + (self.hidden_size,))

    def call(self, x, residual, training=False):
        """Args: x `[B, S, in]`; residual `[B, S, H]`. Returns `[B, S, H]`."""
        y = self.dropout(self.dense(x), training=training)
        return self.layer_norm(y + residual)


class Attention(keras.layers.Layer):
    """Self-attention plus its output projection (scope `attention`: `self` and `output`).

    Args:
        config: a validated `BertConfig`.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = SelfAttention(config, name="self")
        self.output_block = DenseResidualNorm(config, name="output")

    def build(self, input_shape):
        self.self_attention.build(input_shape)
        self.output_block.build(input_shape)

    def call(self, x, attention_bias, training=False, real_tokens=None, queries=None):
        """Args: x `[B, S, H]` or `[T, H]`; attention_bias `[B, 1, 1, S]`; real_tokens: a
        `RealTokens` when x is packed; queries: `[B, R, H]` rows of x that attend (then only
        they are computed). Returns the layout of queries if given, else of x."""
        context = self.self_attention(
            x, attention_bias, training=training, real_tokens=real_tokens, queries=queries
        )
        return self.output_block(context, x if queries is None else queries, training=training)


class Intermediate(keras.layers.Layer):
    """The feed-forward expansion H -> I with the config's activation; no dropout here.

    Args:
        config: a validated `BertConfig`.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        activation = get_activation(config.hidden_act)
        self.dense = dense(config.intermediate_size, "dense", config.initializer_range, activation)

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, x):
        """Args: x `[B, S, H]`. Returns `[B, S, I]`."""
        return self.dense(x)


class TransformerLayer(keras.layers.Layer):
    """One encoder block of the original (post-LayerNorm), scope `encoder/layer_i`.

    attention/self -> attention/output (dense, dropout, +input, LN) -> intermediate
    (dense + activation, no dropout) -> output (dense, dropout, +attention output, LN).

    Args:
        config: a validated `BertConfig`.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.intermediate_size = config.intermediate_size
        self.attention = Attention(config, name="attention")
        self.intermediate = Intermediate(config, name="intermediate")
        self.output_block = DenseResidualNorm(config, name="output")

    def build(self, input_shape):
        hidden = tuple(input_shape)
        self.attention.build(hidden)
        self.intermediate.build(hidden)
        self.output_block.build(hidden[:-1] + (self.intermediate_size,))

    def call(self, x, attention_bias, training=False, real_tokens=None, output_positions=None):
        """Runs the block.

        Args:
            x: `[B, S, H]`, or `[T, H]` with a `RealTokens`.
            attention_bias: `[B, 1, 1, S]`.
            training: enables dropout.
            real_tokens: a `RealTokens` when x is packed.
            output_positions: int `[B, R]`: only these positions' outputs are computed
                (real tokens when packed). Keys and values still come from every position,
                so each row equals the same row of the full output; everything else (the
                queries, the output projection, the feed-forward network) runs on R rows
                instead of S.

        Returns:
            the layout of x, or `[B, R, H]` with output_positions.
        """
        queries = None
        if output_positions is not None and real_tokens is not None:
            queries = real_tokens.rows_at(x, output_positions)
        elif output_positions is not None:
            queries = tf.gather(x, tf.cast(output_positions, tf.int32), batch_dims=1)
        attention_out = self.attention(
            x, attention_bias, training=training, real_tokens=real_tokens, queries=queries
        )
        return self.output_block(self.intermediate(attention_out), attention_out, training=training)

    @property
    def dropouts(self):
        """The layer's dropouts, in call order."""
        return (
            self.attention.self_attention.dropout,
            self.attention.output_block.dropout,
            self.output_block.dropout,
        )

    def recomputed_call(self, x, attention_bias, real_tokens=None, output_positions=None):
        """`call(..., training=True)` keeping only x for the backward pass, which runs the
        layer again (gradient checkpointing): same outputs and gradients, less memory.

        The mechanism is `tf.recompute_grad` around the layer, with every dropout's seed drawn
        here, outside the recomputed function, and handed to both passes (`Dropout.seeded`):
        the recomputation draws the forward pass's masks, the very masks a plain call draws
        (each generator advances once per call, as there). `keras.RematScope` is not used: on
        the TensorFlow backend it wraps a layer's call in `tf.recompute_grad` too, but the
        Keras dropout inside advances its `SeedGenerator` on every call, so its recomputation
        would draw new masks and the gradients would not be those of the loss.

        Args: as `call`; x is the only tensor differentiated (the bias, the real-token
        indices and output positions carry no gradient).
        """
        seeds = [dropout.draw_seed() for dropout in self.dropouts]

        def block(x):
            with contextlib.ExitStack() as stack:
                for dropout, seed in zip(self.dropouts, seeds, strict=True):
                    stack.enter_context(dropout.seeded(seed))
                return self(
                    x,
                    attention_bias,
                    training=True,
                    real_tokens=real_tokens,
                    output_positions=output_positions,
                )

        return tf.recompute_grad(block)(x)
