"""The original BERT learning-rate schedule: linear warmup, then linear decay to zero."""

import math
import numbers

import keras
import numpy as np
import tensorflow as tf


def check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"optimization: {name} must be an integer number of steps, got {value!r} "
            f"({type(value).__name__}); pass an int >= {minimum}."
        )
    if value < minimum:
        raise ValueError(f"optimization: {name} must be >= {minimum}, got {value}.")
    return int(value)


def check_float(value, name, allow_zero=True, allow_negative=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (value < 0 and not allow_negative) or (value == 0 and not allow_zero):
        bound = "" if allow_negative else " >= 0" if allow_zero else " > 0"
        raise ValueError(f"optimization: {name} must be a finite number{bound}, got {value!r}.")
    return float(value)


@keras.saving.register_keras_serializable(package="bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup then linear decay to zero, exactly as the original BERT schedule.

    `decay(step) = init_lr * (1 - min(step, num_train_steps) / num_train_steps)`, and while
    `step < num_warmup_steps` the rate is `init_lr * step / num_warmup_steps` instead. The
    decay is measured from step 0, not from the end of warmup, so the rate jumps from
    `init_lr * (W - 1) / W` to `init_lr * (1 - W / N)` when warmup ends; the original behaves
    this way and it is kept so that runs can be compared with it. The first update (step 0)
    uses a rate of 0. Values equal the original's bit for bit, eagerly and in `tf.function`;
    under XLA (`jit_compile=True`) they may differ in the last bit.

    The original's graph also ran a negative `init_lr` (the updates then climb the loss) and a
    negative W (no step is below it: no warmup); both give the original's rates here too.

    Args:
        init_lr: Peak learning rate, a finite float (>= 0 in any run meant to learn).
        num_train_steps: Total number of training steps N (int > 0); the rate is 0 from N on.
        num_warmup_steps: Number of warmup steps W (int); 0 or less disables warmup.

    Raises:
        ValueError: If an argument is out of range or of the wrong type.
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0):
        self.init_lr = check_float(init_lr, "init_lr", allow_negative=True)
        self.num_train_steps = check_int(num_train_steps, "num_train_steps", 1)
        self.num_warmup_steps = check_int(num_warmup_steps, "num_warmup_steps", -(2**62))

    def __call__(self, step):
        """Returns the float32 scalar learning rate for the integer scalar `step`."""
        with tf.name_scope("WarmupLinearDecay"):
            step = tf.cast(tf.convert_to_tensor(step), tf.int64)
            f32 = np.float32
            # The original's graph is float32 throughout, and TensorFlow's graph optimizer
            # rewrites its `x / constant` as `x * (1 / constant)` and folds `init_lr * (step /
            # W)` into `step * (init_lr * (1 / W))`. Those are the values the original trained
            # with, so they are written out here: the result is then the same eagerly and in
            # tf.function, and equals the original's bit for bit (the textbook formulas differ
            # from it in the last bit for some steps).
            init_lr = f32(self.init_lr)
            total = f32(self.num_train_steps)
            step_f = tf.cast(step, tf.float32)
            done = tf.minimum(step_f, tf.constant(total)) * tf.constant(f32(1) / total)
            # Under XLA `1 - done` may become a fused multiply-add, which leaves a residue of
            # about -1e-8 from step N on; the clamp keeps the remaining share from turning
            # negative (the rate from changing sign) and changes no value computed without XLA.
            learning_rate = tf.constant(init_lr) * tf.maximum(1.0 - done, 0.0)
            if self.num_warmup_steps > 0:
                warmup_rate = init_lr * (f32(1) / f32(self.num_warmup_steps))
                warmup_lr = step_f * tf.constant(warmup_rate)
                is_warmup = tf.cast(step < self.num_warmup_steps, tf.float32)
                learning_rate = (1.0 - is_warmup) * learning_rate + is_warmup * warmup_lr
            return learning_rate

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
        }
