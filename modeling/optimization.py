"""Optimizers with the original BERT training semantics.

`AdamWeightDecay` is the optimizer the original `create_optimizer` built, on TensorFlow's fused
Adam kernel with constants chosen so that each step is the original's up to rounding order;
`Lamb` is the layer-wise adaptive variant of large-batch BERT pre-training recipes, each
variable's update one XLA-compiled pass. The learning-rate schedule is in
`modeling.lr_schedule`.
"""

import math

import keras
import numpy as np
import tensorflow as tf

from modeling.decoupled_decay import DecoupledDecayOptimizer, component
from modeling.lr_schedule import WarmupLinearDecay

# Variables whose names contain any of these patterns get no weight decay (the original list).
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


@keras.saving.register_keras_serializable(package="bert")
class AdamWeightDecay(DecoupledDecayOptimizer):
    """Adam with decoupled weight decay, with the original BERT optimizer's exact arithmetic.

    Per variable: `m <- b1*m + (1-b1)*g`, `v <- b2*v + (1-b2)*g^2`,
    `update = m / (sqrt(v) + epsilon)` with no bias correction, plus `weight_decay_rate * param`
    unless the variable is excluded, then `param <- param - lr * update`. The slots are named
    `adam_m` and `adam_v`. A variable is excluded when any pattern of
    `exclude_from_weight_decay` is found (`re.search`) in its name, which is the Keras `path`
    without ':0' (the model names its layers so paths are the TF1 names, e.g.
    `bert/encoder/layer_0/attention/output/LayerNorm/gamma`) or `name_fn(variable)` if given.

    With `bias_correction`, Adam's own step instead (off in the original; Mosbach et al. 2021
    relate its absence to failed fine-tuning runs on small sets): `update = m_hat /
    (sqrt(v_hat) + epsilon)` with `m_hat = m / (1 - b1^t)`, `v_hat = v / (1 - b2^t)` at the
    1-based step `t`; the decay term is unchanged.

    The update runs on TensorFlow's fused Adam kernel (see `_kernel_constants`): the weights
    follow the original's arithmetic up to rounding order (a few float32 ulps over many steps);
    the slots hold the kernel's moments, which are the original's times 1 + 2.2e-7 (`adam_m`)
    and 1 - 1.3e-5 (`adam_v`) for the default betas.

    With `clip_norm` set, all gradients are clipped together with `tf.clip_by_global_norm`
    before the update, as the original training op did. Under `tf.distribute` each replica
    clips its own gradients before the cross-replica sum, as the original did per TPU core.

    Under `tf.distribute`, build the optimizer's variables inside the strategy scope before
    the first distributed step: `with strategy.scope(): optimizer.build(model.trainable_variables)`.

    Args:
        learning_rate: A float or a `LearningRateSchedule` (see `WarmupLinearDecay`).
        weight_decay_rate: Decoupled decay factor added to the update; 0 disables decay.
        beta_1: Decay of the first-moment average.
        beta_2: Decay of the second-moment average.
        epsilon: Added to `sqrt(v)` (outside the square root).
        exclude_from_weight_decay: Regex strings; matching variables are not decayed.
        clip_norm: Global-norm clipping threshold, or None for no clipping.
        name_fn: Optional `name_fn(variable) -> str` giving the name matched against the
            exclusion patterns.
        name: Optimizer name.
        bias_correction: Adam's bias correction of the moments (off: the original).
        **kwargs: Other `keras.optimizers.Optimizer` arguments (e.g. `use_ema`).

    Raises:
        ValueError: If `weight_decay_rate` or `clip_norm` is out of range, or if `clip_norm`
            is combined with Keras' own clipping arguments or `weight_decay`.
    """

    default_weight_decay_rate = 0.0
    default_name = "AdamWeightDecay"

    def __init__(self, learning_rate, *args, bias_correction=False, **kwargs):
        super().__init__(learning_rate, *args, **kwargs)
        self.bias_correction = bool(bias_correction)

    def _corrections(self, iteration, dtype):
        """(1 - b1^t, 1 - b2^t) at step t = iteration + 1, as -expm1(t log b): float32-exact."""
        t = tf.cast(iteration + 1, dtype)
        return tuple(-tf.math.expm1(t * math.log(b)) for b in (self.beta_1, self.beta_2))

    def _new_values(self, param, m, v, grad, lr, iteration, excluded):
        next_m, next_v = self._next_moments(m, v, grad)
        if self.bias_correction:
            c1, c2 = self._corrections(iteration, param.dtype)
            update = (next_m / c1) / (tf.sqrt(next_v / c2) + self.epsilon)
        else:
            update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if self.weight_decay_rate and not excluded:
            update += self.weight_decay_rate * param
        return param - lr * update, next_m, next_v

    def get_config(self):
        return {**super().get_config(), "bias_correction": self.bias_correction}

    def _kernel_constants(self):
        """(lr factor, epsilon) that make TensorFlow's fused Adam kernel take the original's step.

        The kernel updates `m += (g - m) * (1 - b1)` with `1 - b1` formed in float32 from the
        float32 `b1`, where the original multiplies `g` by float32(1 - b1) formed in float64.
        The decay of the moments is the same (`1 - (1 - b1) = b1` exactly), so the kernel's
        moments are the original's times `k = (1 - fl(b1)) / fl(1 - b1)` (1 + 2.2e-7 for
        b1 = 0.9, 1 - 1.3e-5 for b2 = 0.999). Its step `m_k / (sqrt(v_k) + eps')` equals the
        original's `m / (sqrt(v) + eps)` times `k1 / sqrt(k2)` when `eps' = eps * sqrt(k2)`;
        the learning rate takes the inverse factor.
        """

        def ratio(beta):
            b = float(np.float32(beta))
            return (1.0 - b) / float(np.float32(1.0 - beta))

        k1, k2 = ratio(self.beta_1), ratio(self.beta_2)
        return math.sqrt(k2) / k1, self.epsilon * math.sqrt(k2)

    def update_step(self, gradient, variable, learning_rate):
        # TensorFlow's fused Adam kernel (one multi-threaded pass over the variable and both
        # slots, on every device) applies the original's uncorrected step when the
        # bias-correction powers are 0 (its step size lr * sqrt(1 - 0) / (1 - 0) is lr) and
        # its constants are adjusted as `_kernel_constants` says. The decay is taken from the
        # pre-update weights first, so the sum is the original's
        # `param - lr * (m / (sqrt(v) + eps) + wd * param)` up to rounding order.
        # `_new_values` keeps the op-by-op form as the reference.
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        m, v = self._adam_m[index], self._adam_v[index]
        variable = component(variable, None)
        lr = tf.cast(learning_rate, dtype)
        if self.weight_decay_rate and not self._excluded_flags[index]:
            variable.assign_sub(variable * (lr * tf.cast(self.weight_decay_rate, dtype)))
        lr_factor, epsilon = self._kernel_constants()
        lr, epsilon = lr * tf.cast(lr_factor, dtype), tf.cast(epsilon, dtype)
        if self.bias_correction:
            # m_hat / (sqrt(v_hat) + eps) = sqrt(c2) / c1 * m / (sqrt(v) + eps * sqrt(c2)); the
            # kernel's own beta powers would form 1 - b^t less exactly.
            c1, c2 = self._corrections(tf.convert_to_tensor(self.iterations), dtype)
            lr, epsilon = lr * tf.sqrt(c2) / c1, epsilon * tf.sqrt(c2)
        zero = tf.zeros([], dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=component(m, variable).handle,
            v=component(v, variable).handle,
            beta1_power=zero,
            beta2_power=zero,
            lr=lr,
            beta1=tf.cast(self.beta_1, dtype),
            beta2=tf.cast(self.beta_2, dtype),
            epsilon=epsilon,
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype),
        )


@keras.saving.register_keras_serializable(package="bert")
class Lamb(DecoupledDecayOptimizer):
    """LAMB: Adam moments with layer-wise trust ratio (You et al., 2019, arXiv:1904.00962).

    Per variable, with `t` the 1-based step: `m_hat = m / (1 - b1^t)`,
    `v_hat = v / (1 - b2^t)`, `update = m_hat / (sqrt(v_hat) + epsilon) + wd * param`, and
    `param <- param - lr * r * update` with trust ratio `r = ||param|| / ||update||` (1 when
    either norm is 0). Variables matching `exclude_from_weight_decay` (same rule and naming as
    `AdamWeightDecay`) get neither the decay nor the trust ratio, i.e. plain Adam. Clipping and
    the `tf.distribute` build requirement are as for `AdamWeightDecay`.

    Args:
        learning_rate: A float or a `LearningRateSchedule`.
        weight_decay_rate: Decoupled decay factor added to the update.
        beta_1: Decay of the first-moment average.
        beta_2: Decay of the second-moment average.
        epsilon: Added to `sqrt(v_hat)`.
        exclude_from_weight_decay: Regex strings; matching variables get plain Adam.
        clip_norm: Global-norm clipping threshold, or None for no clipping.
        name_fn: Optional `name_fn(variable) -> str` for the exclusion patterns.
        name: Optimizer name.
        **kwargs: Other `keras.optimizers.Optimizer` arguments.

    Raises:
        ValueError: As for `AdamWeightDecay`.
    """

    default_weight_decay_rate = 0.01
    default_name = "Lamb"

    def _new_values(self, param, m, v, grad, lr, iteration, excluded):
        dtype = param.dtype
        step = tf.cast(iteration + 1, dtype)
        next_m, next_v = self._next_moments(m, v, grad)
        m_hat = next_m / (1.0 - tf.pow(tf.cast(self.beta_1, dtype), step))
        v_hat = next_v / (1.0 - tf.pow(tf.cast(self.beta_2, dtype), step))
        update = m_hat / (tf.sqrt(v_hat) + self.epsilon)
        if not excluded:
            if self.weight_decay_rate:
                update += self.weight_decay_rate * param
            param_norm = tf.norm(param)
            update_norm = tf.norm(update)
            usable = tf.logical_and(param_norm > 0.0, update_norm > 0.0)
            # The inner where keeps the unused branch finite when a norm is 0.
            ratio = tf.where(
                usable, param_norm / tf.where(usable, update_norm, 1.0), tf.ones([], dtype)
            )
            update = ratio * update
        return param - lr * update, next_m, next_v


def create_optimizer(
    init_lr,
    num_train_steps,
    num_warmup_steps,
    optimizer_type="adamw",
    weight_decay_rate=0.01,
    clip_norm=1.0,
    adam_bias_correction=False,
):
    """Builds the optimizer of the original BERT training op, or LAMB.

    The optimizer uses `WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)`,
    excludes `LayerNorm`, `layer_norm` and `bias` variables from weight decay, and clips
    gradients to global norm `clip_norm` (1.0 in the original: "This is how the model was
    pre-trained"). Keras increments `optimizer.iterations` after each update, so the first
    update uses the step-0 rate, as the original did.

    Args:
        init_lr: Peak learning rate (a finite float, >= 0 to learn; see `WarmupLinearDecay`).
        num_train_steps: Total number of training steps (int > 0).
        num_warmup_steps: Linear warmup steps (int; 0 or less: none).
        optimizer_type: "adamw" (the original AdamWeightDecayOptimizer) or "lamb".
        weight_decay_rate: Decoupled weight decay for non-excluded variables.
        clip_norm: Global-norm clipping threshold, or None to disable clipping.
        adam_bias_correction: "adamw" with Adam's bias correction (LAMB always has it).

    Returns:
        An `AdamWeightDecay` or `Lamb` optimizer.

    Raises:
        ValueError: If `optimizer_type` is unknown or a numeric argument is out of range.
    """
    optimizers = {"adamw": AdamWeightDecay, "lamb": Lamb}
    if optimizer_type not in optimizers:
        raise ValueError(
            f"optimization: unknown optimizer_type {optimizer_type!r}; "
            f"choose one of {sorted(optimizers)}."
        )
    schedule = WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)
    options = {"bias_correction": adam_bias_correction} if optimizer_type == "adamw" else {}
    return optimizers[optimizer_type](
        **options,
        learning_rate=schedule,
        weight_decay_rate=weight_decay_rate,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=list(DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY),
        clip_norm=clip_norm,
    )
