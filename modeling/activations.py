"""Activation functions named by `bert_config.json`'s `hidden_act`."""

import math

import tensorflow as tf


def gelu(x):
    """GELU, tanh approximation: the final original release's "gelu".

    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).

    Args:
        x: float Tensor of any shape.

    Returns:
        Tensor of the same shape and dtype.
    """
    cdf = 0.5 * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


def gelu_exact(x):
    """GELU, exact erf form: x * 0.5 * (1 + erf(x / sqrt(2))).

    Used by the first original release and by every Hugging Face "gelu" model (all-MiniLM,
    bert-base-uncased converted by transformers...). With the tanh form their outputs drift by
    about 5e-3.

    Args:
        x: float Tensor of any shape.

    Returns:
        Tensor of the same shape and dtype.
    """
    return x * 0.5 * (1.0 + tf.math.erf(x / math.sqrt(2.0)))


def get_activation(activation):
    """Maps an activation name to a function, as the original `get_activation` does.

    Args:
        activation: a callable (returned unchanged), None/"" (None), or a case-insensitive
            name: "linear" (None), "relu", "gelu", "gelu_exact", "tanh".

    Returns:
        A function Tensor -> Tensor, or None for the identity.

    Raises:
        ValueError: for any other name.
    """
    if not isinstance(activation, str):
        return activation
    if not activation:
        return None
    name = activation.lower()
    table = {
        "linear": None,
        "relu": tf.nn.relu,
        "gelu": gelu,
        "gelu_exact": gelu_exact,
        "tanh": tf.tanh,
    }
    if name not in table:
        raise ValueError(f"Unsupported activation: {activation}")
    return table[name]
