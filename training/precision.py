"""The compute precision of a run (`--precision`): a Keras dtype policy, and dynamic loss
scaling for float16 training.

Variables, checkpoints and exported weights stay float32 under every policy; the model
computes matrix products in the policy's compute dtype and keeps softmax, LayerNorm, logits
and losses in float32 (see `modeling.layers` and `modeling.heads`).

Dynamic loss scaling (`--precision=mixed_float16`): float16 gradients of small losses
underflow to zero; the loss is multiplied by a large scale before differentiating and the
gradients divided by it after. A step whose gradients are not finite is skipped and the scale
halved; after 2000 finite steps in a row it is doubled (the schedule of
`tf.keras.mixed_precision.LossScaleOptimizer`). A skipped step still counts as a step, as
every train op of the original advanced `global_step`. bfloat16 and float32 need none of it.
"""

import contextlib
import functools

import keras
import tensorflow as tf

from training.settings import PRECISIONS


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


_INITIAL_SCALE = 2.0**15
_GROWTH_INTERVAL = 2000


class DynamicLossScale:
    """The scale and its count of finite steps, as variables saved with each checkpoint.

    Create it inside the strategy's scope.

    Args:
        enabled: False for float32 and bfloat16: every method then leaves values as they are.
        growth_interval: finite steps in a row after which the scale doubles.

    Raises:
        ValueError: if `growth_interval` is not a positive integer.
    """

    def __init__(self, enabled, growth_interval=_GROWTH_INTERVAL):
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int):
            raise ValueError(f"growth_interval must be an int, got {growth_interval!r}.")
        if growth_interval < 1:
            raise ValueError(f"growth_interval must be at least 1, got {growth_interval}.")
        self.enabled = enabled
        self.growth_interval = growth_interval
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

    def apply_if_finite(self, grads, apply_fn, iterations):
        """Calls `apply_fn(grads)` unless some gradient is not finite, then updates the scale.

        Call it in a replica context (inside `strategy.run`) with the gradients already summed
        over replicas, so that every replica takes the same decision.

        Args:
            grads: the unscaled gradients of this step.
            apply_fn: `grads -> None`, applies them; it advances `iterations` by one.
            iterations: the optimizer's step counter. A skipped step advances it by one too,
                so the learning-rate schedule, which reads it, and a resume, which sets it to
                the checkpoint's `global_step`, see every step, skipped or not.
        """
        if not self.enabled:
            apply_fn(grads)
            return
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
        # The decision is taken once, in the cross-replica context: a tf.cond in a replica
        # context cannot hold the synchronisation that apply_gradients does under
        # MirroredStrategy, and the scale and the counter are mirrored variables that only a
        # cross-replica update keeps equal on every device.
        tf.distribute.get_replica_context().merge_call(
            functools.partial(self._update, apply_fn=apply_fn, iterations=iterations),
            args=(finite, grads),
        )

    def _update(self, strategy, finite, grads, apply_fn, iterations):
        finite = strategy.experimental_local_results(finite)[0]

        def apply():
            strategy.extended.call_for_each_replica(apply_fn, args=(grads,))
            return tf.constant(True)

        def skip():
            iterations.assign_add(1)
            return tf.constant(False)

        tf.cond(finite, apply, skip)
        good = tf.where(finite, self.good_steps + 1, 0)
        grow = good >= self.growth_interval
        self.value.assign(
            tf.where(
                finite,
                tf.where(grow, self.value * 2.0, self.value),
                tf.maximum(self.value / 2.0, 1.0),
            )
        )
        self.good_steps.assign(tf.where(grow, tf.zeros_like(good), good))
