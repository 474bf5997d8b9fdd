"""A minimal ``tensorflow.contrib`` for importing the original ``bert.modeling`` under TF2.

TF2 removed ``tensorflow.contrib``; the original ``bert.modeling`` imports
``tensorflow.contrib.layers`` and uses only ``layers.layer_norm`` from it. Importing this
module registers ``tensorflow.contrib`` and ``tensorflow.contrib.layers`` in ``sys.modules``
so that ``import bert.modeling`` succeeds. The stand-in reproduces TF 1.x's layer_norm: the
same variable names (``LayerNorm/beta`` zeros, ``LayerNorm/gamma`` ones), epsilon 1e-12 and
population variance from ``nn.moments`` fed to ``nn.batch_normalization``.

Only for graph mode (``tf.compat.v1``) in an oracle process.
"""

import sys
import types

import tensorflow as tf

# TF 1.x contrib hard-coded this value; the original BERT numbers depend on it.
_LAYER_NORM_EPSILON = 1e-12


def layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None):
    """Layer normalization as ``tf.contrib.layers.layer_norm`` computed it in TF 1.x.

    Args:
        inputs: float Tensor of shape [..., H]; its rank must be known.
        begin_norm_axis: First axis of the normalized dimensions (negative counts from
            the end).
        begin_params_axis: First axis of the beta/gamma shape (negative counts from the
            end).
        scope: Variable scope name; ``None`` means a fresh scope named ``LayerNorm``.

    Returns:
        A Tensor with the shape and dtype of ``inputs``.

    Raises:
        ValueError: If the rank of ``inputs`` is unknown or an axis is out of range.
    """
    tf1 = tf.compat.v1
    inputs = tf.convert_to_tensor(inputs)
    rank = inputs.shape.rank
    if rank is None:
        raise ValueError(f"layer_norm needs inputs of known rank, got shape {inputs.shape}.")
    norm_axis = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
    params_axis = begin_params_axis + rank if begin_params_axis < 0 else begin_params_axis
    if not (0 <= norm_axis < rank and 0 <= params_axis < rank):
        raise ValueError(
            f"begin_norm_axis={begin_norm_axis} / begin_params_axis={begin_params_axis} "
            f"are out of range for inputs of rank {rank}."
        )
    params_shape = inputs.shape[params_axis:]
    with tf1.variable_scope(scope, default_name="LayerNorm", values=[inputs]):
        beta = tf1.get_variable(
            "beta", shape=params_shape, dtype=inputs.dtype, initializer=tf1.zeros_initializer()
        )
        gamma = tf1.get_variable(
            "gamma", shape=params_shape, dtype=inputs.dtype, initializer=tf1.ones_initializer()
        )
        mean, variance = tf1.nn.moments(inputs, list(range(norm_axis, rank)), keep_dims=True)
        return tf1.nn.batch_normalization(
            inputs,
            mean,
            variance,
            offset=beta,
            scale=gamma,
            variance_epsilon=_LAYER_NORM_EPSILON,
        )


def install() -> None:
    """Registers the stand-in modules in ``sys.modules`` (idempotent)."""
    if "tensorflow.contrib" in sys.modules:
        return
    contrib = types.ModuleType("tensorflow.contrib")
    layers = types.ModuleType("tensorflow.contrib.layers")
    layers.layer_norm = layer_norm
    contrib.layers = layers
    sys.modules["tensorflow.contrib"] = contrib
    sys.modules["tensorflow.contrib.layers"] = layers


install()
