"""Dynamic loss scaling for float16 training (`--precision=mixed_float16`).

float16 gradients of small losses underflow to zero; the loss is multiplied by a large scale
before differentiating and the gradients divided by it after. A step whose gradients are not
finite is skipped and the scale halved; after 2000 finite steps in a row it is doubled (the
schedule of `tf.keras.mixed_precision.LossScaleOptimizer`). bfloat16 and float32 need none of it.
"""

import tensorflow as tf

_INITIAL_SCALE = 2.0**15
_GROWTH_INTERVAL = 2000


class DynamicLossScale:
    """The scale and its count of finite steps, as variables saved with each checkpoint.

    Create it inside the strategy's scope.

    Args:
        enabled: False for float32 and bfloat16: every method then leaves values as they are.
    """

    def __init__(self, enabled):
        self.enabled = enabled
        self.value = tf.Variable(
            _INITIAL_SCALE if enabled else 1.0, trainable=False, dtype=tf.float32
        )
        self.good_steps = tf.Variable(0, trainable=False, dtype=tf.int64)

    def checkpoint_state(self):
        """Name -> variable of the state a resumed run needs (none when disabled)."""
        if not self.enabled:
            return {}
        return {"loss_scale": self.value, "loss_scale_good_steps": self.good_steps}

    def scale(self, loss):
        # Disabled, the variable is not read: one read less per step costs measurable XLA
        # time on small models.
        return loss * self.value if self.enabled else loss

    def unscale(self, grads):
        return [g / self.value for g in grads] if self.enabled else grads

    def apply_if_finite(self, grads, apply_fn):
        """Calls `apply_fn()` unless some gradient is not finite, then updates the scale."""
        if not self.enabled:
            apply_fn()
            return
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])

        def apply():
            apply_fn()
            return tf.constant(True)

        tf.cond(finite, apply, lambda: tf.constant(False))
        good = tf.where(finite, self.good_steps + 1, 0)
        grow = good >= _GROWTH_INTERVAL
        self.value.assign(
            tf.where(
                finite,
                tf.where(grow, self.value * 2.0, self.value),
                tf.maximum(self.value / 2.0, 1.0),
            )
        )
        self.good_steps.assign(tf.where(grow, tf.zeros_like(good), good))
