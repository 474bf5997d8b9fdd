"""Small building blocks shared by the encoder and the heads."""

import contextlib

import keras
import tensorflow as tf

# The original's LayerNorm (tf.contrib.layers.layer_norm) hard-codes this epsilon.
LAYER_NORM_EPSILON = 1e-12


# Depth of `weights_from_checkpoint` blocks around the current construction.
_deferred_initialization = 0


@contextlib.contextmanager
def weights_from_checkpoint():
    """Variables created inside start at zero instead of their truncated-normal draws.

    For a model that a strict checkpoint load overwrites entirely right after construction
    (prediction, feature extraction, export, conversion), as the original's
    `init_from_checkpoint` replaces the variables' initializers instead of running them: the
    draws cost ~0.9 s per 23 M values on a CPU (BERT-base's word embeddings), all thrown away.
    Never use it where a variable may be left as initialised (a task head trained from a
    pre-trained checkpoint).
    """
    global _deferred_initialization
    _deferred_initialization += 1
    try:
        yield
    finally:
        _deferred_initialization -= 1


def truncated_normal(stddev):
    """The original's initializer: truncated normal (re-drawn beyond 2 stddev), mean 0.

    Zeros inside `weights_from_checkpoint`, whose callers assign every variable afterwards.
    """
    if _deferred_initialization:
        return keras.initializers.Zeros()
    return keras.initializers.TruncatedNormal(stddev=stddev)


def dense(units, name, initializer_range, activation=None):
    """A dense layer as `tf.layers.dense` in the original: kernel `[in, out]`, zero bias.

    Args:
        units: output width.
        name: layer name; it is the checkpoint scope (`query`, `dense`, ...).
        initializer_range: stddev of the truncated-normal kernel initializer.
        activation: a function or None.

    Returns:
        A `keras.layers.Dense` with variables `kernel` `[in, units]` and `bias` `[units]`.
    """
    return keras.layers.Dense(
        units,
        activation=activation,
        kernel_initializer=truncated_normal(initializer_range),
        bias_initializer="zeros",
        name=name,
    )


class LayerNorm(keras.layers.Layer):
    """Layer normalisation over the last axis, as the original's `layer_norm`.

    Variables `gamma` (ones) and `beta` (zeros) of shape `[H]`; population variance; epsilon
    1e-12. Statistics and the scale and shift are computed in float32 whatever the compute dtype,
    with the float32 variables, because a half-precision variance of 768 values loses the digits
    the 1e-12 epsilon is meant to protect; only the result is cast to the compute dtype, the
    input of the next matmul.

    The layer is conventionally named "LayerNorm" (CamelCase) because that is its checkpoint
    scope in every original BERT checkpoint.
    """

    def build(self, input_shape):
        width = input_shape[-1]
        # autocast=False: under a mixed policy Keras would hand `call` float16 / bfloat16
        # copies of gamma and beta, rounding them before the float32 arithmetic below.
        self.gamma = self.add_weight(
            name="gamma", shape=(width,), initializer="ones", autocast=False
        )
        self.beta = self.add_weight(
            name="beta", shape=(width,), initializer="zeros", autocast=False
        )

    def call(self, x):
        x32 = tf.cast(x, tf.float32)
        mean, variance = tf.nn.moments(x32, axes=[-1], keepdims=True)
        inv = tf.math.rsqrt(variance + LAYER_NORM_EPSILON)
        y = (x32 - mean) * inv * tf.cast(self.gamma, tf.float32) + tf.cast(self.beta, tf.float32)
        return tf.cast(y, self.compute_dtype)


class Dropout(keras.layers.Dropout):
    """Keras dropout whose mask can come from a seed drawn before the call.

    Without a seed set (`seeded`), it is `keras.layers.Dropout` exactly. With one, it draws
    the mask Keras would draw from that seed (the same stateless op on the same seed), so a
    call repeated inside a recomputation (`TransformerLayer.recomputed_call`) draws the mask
    of the first call instead of advancing the `SeedGenerator` state and drawing a new one.
    """

    def draw_seed(self):
        """The seed of this layer's next mask (int64 `[2]`), advancing its generator once as a
        call would; None at rate 0, which draws nothing."""
        return self.seed_generator.next() if self.rate > 0 else None

    @contextlib.contextmanager
    def seeded(self, seed):
        """Calls inside use `seed` (from `draw_seed`) instead of the generator."""
        object.__setattr__(self, "_fixed_seed", seed)
        try:
            yield
        finally:
            object.__setattr__(self, "_fixed_seed", None)

    def call(self, inputs, training=False):
        seed = getattr(self, "_fixed_seed", None)
        if seed is None or not training or self.rate <= 0:
            return super().call(inputs, training=training)
        # As keras.src.backend.tensorflow.random.dropout: stateless ops take int32 seeds.
        if seed.dtype != tf.int32:
            seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
        return tf.nn.experimental.stateless_dropout(inputs, rate=self.rate, seed=seed)


def gather_positions(sequence, positions):
    """Gathers vectors at the given positions of each example.

    Args:
        sequence: float Tensor `[B, S, H]`.
        positions: int Tensor `[B, P]` of indices into the sequence axis.

    Returns:
        Tensor `[B * P, H]`, flattened as the original `gather_indexes` does.
    """
    gathered = tf.gather(sequence, tf.cast(positions, tf.int32), batch_dims=1)
    return tf.reshape(gathered, [-1, tf.shape(sequence)[-1]])
