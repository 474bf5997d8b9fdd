"""The compute precision of a run (`--precision`): a Keras dtype policy.

Variables, checkpoints and exported weights stay float32 under every policy; the model
computes matrix products in the policy's compute dtype and keeps softmax, LayerNorm, logits
and losses in float32 (see `modeling.layers` and `modeling.heads`).
"""

import contextlib

import keras

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


def check_precision(precision):
    """ValueError naming the choices unless `precision` is one of `PRECISIONS`."""
    if precision not in PRECISIONS:
        raise ValueError(f"--precision {precision!r}; use one of {list(PRECISIONS)}.")


@contextlib.contextmanager
def compute_policy(precision):
    """Models built inside compute in `precision`; the previous global policy comes back after.

    Keras reads the global policy when a layer is created, so only building needs to happen
    inside; calling the model later keeps its policy.
    """
    check_precision(precision)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(precision)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)
