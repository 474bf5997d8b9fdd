"""Optimizers with the original BERT training semantics.

`AdamWeightDecay` is the optimizer the original `create_optimizer` built, on TensorFlow's fused
Adam kernel with constants chosen so that each step is the original's up to rounding order;
`Lamb` is the layer-wise adaptive variant of large-batch BERT pre-training recipes, each
variable's update one XLA-compiled pass. The learning-rate schedule is in
`modeling.lr_schedule`.
"""

import math
import re

import keras
import numpy as np
import tensorflow as tf

from modeling.lr_schedule import WarmupLinearDecay, check_float

# Variables whose names contain any of these patterns get no weight decay (the original list).
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


def _default_variable_name(variable):
    """The Keras `path` of a variable (its TF1 name in this project), without any ':0'."""
    name = getattr(variable, "path", None) or variable.name
    return re.sub(r":\d+$", "", name)


def _component(variable, beside):
    """The tf.Variable that an update of `beside` on this device writes: for a Keras variable
    its backing variable, for a distributed one the copy on `beside`'s device."""
    value = variable.value if isinstance(variable, keras.Variable) else variable
    if beside is None or not tf.distribute.has_strategy():
        return value
    copies = tf.distribute.get_strategy().experimental_local_results(value)
    return next((c for c in copies if c.device == beside.device), copies[0])


class _DecoupledDecayOptimizer(keras.optimizers.Optimizer):
    """Shared parts of `AdamWeightDecay` and `Lamb`: exclusions, slots and clipping."""

    # Per-class defaults of the two arguments whose defaults differ between the subclasses.
    default_weight_decay_rate = 0.0
    default_name = None

    def __init__(
        self,
        learning_rate,
        weight_decay_rate=None,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=None,
        clip_norm=None,
        name_fn=None,
        name=None,
        **kwargs,
    ):
        if weight_decay_rate is None:
            weight_decay_rate = self.default_weight_decay_rate
        name = name or self.default_name
        # Decay is applied inside update_step in the original's order, never by the base class.
        if kwargs.pop("weight_decay", None) is not None:
            raise ValueError(
                f"{type(self).__name__}: use weight_decay_rate=..., not weight_decay=...; "
                "the Keras weight_decay mechanism orders the arithmetic differently."
            )
        if clip_norm is not None:
            clip_norm = check_float(clip_norm, "clip_norm", allow_zero=False)
            keras_clipping = [
                k for k in ("clipnorm", "clipvalue", "global_clipnorm") if kwargs.get(k)
            ]
            if keras_clipping:
                raise ValueError(
                    f"{type(self).__name__}: clip_norm={clip_norm} cannot be combined with "
                    f"{keras_clipping}; set only one kind of clipping."
                )
        super().__init__(learning_rate=learning_rate, weight_decay=None, name=name, **kwargs)
        self.weight_decay_rate = check_float(weight_decay_rate, "weight_decay_rate")
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        # Not `self.exclude_from_weight_decay`: that name is a method of the Keras base class.
        self._exclude_patterns = list(exclude_from_weight_decay or ())
        self.clip_norm = clip_norm
        self._name_fn = name_fn or _default_variable_name

    def variable_name(self, variable):
        """Returns the name matched against the exclusion patterns for `variable`."""
        return self._name_fn(variable)

    def is_excluded(self, variable):
        """Whether an exclusion pattern is found in the name of `variable`."""
        name = self.variable_name(variable)
        return any(re.search(p, name) is not None for p in self._exclude_patterns)

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Not supported: pass `exclude_from_weight_decay=[...]` to the constructor."""
        raise ValueError(
            f"{type(self).__name__}: set exclusions with the constructor argument "
            f"exclude_from_weight_decay=[...] (got var_list={var_list}, var_names={var_names})."
        )

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._adam_m, self._adam_v = self.add_optimizer_variables(var_list, ["adam_m", "adam_v"])
        # Decided here from the Keras variables, because update_step may receive the backing
        # tf.Variable (which has no `path`) when running under tf.distribute.
        self._excluded_flags = tuple(self.is_excluded(v) for v in var_list)

        # Compiled, the dozen element-wise ops of a variable's update run as one pass that
        # writes the variable and its slots in place (a third of the step's memory traffic);
        # traced once per shape and exclusion.
        self._compiled_update = tf.function(self._update_in_place, jit_compile=True)

    def slot_variables(self, variable):
        """The slots of `variable`, keyed by the suffix of their original checkpoint names
        (`X/adam_m`, `X/adam_v`)."""
        index = self._get_variable_index(variable)
        return {"adam_m": self._adam_m[index], "adam_v": self._adam_v[index]}

    # A training loop that all-reduces (and clips) the global gradient itself sets this to
    # False, so that apply_gradients does not sum the replicas' copies a second time.
    aggregate_gradients = True

    def _all_reduce_sum_gradients(self, grads_and_vars):
        if not self.aggregate_gradients:
            return list(grads_and_vars)
        return super()._all_reduce_sum_gradients(grads_and_vars)

    def _clip_gradients(self, grads):
        if self.clip_norm is None:
            return super()._clip_gradients(grads)
        clipped, _ = tf.clip_by_global_norm(list(grads), self.clip_norm)
        return clipped

    def _next_moments(self, m, v, grad):
        """The new adam_m and adam_v, in the original's order of operations."""
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
        return next_m, next_v

    def _new_values(self, param, m, v, grad, lr, iteration, excluded):
        """(new param, new adam_m, new adam_v) of one variable, from tensors."""
        raise NotImplementedError

    def _update_in_place(self, variable, m, v, grad, lr, iteration, excluded):
        """Writes `_new_values` into the tf.Variables `variable`, `m`, `v` (run compiled)."""
        values = [tf.convert_to_tensor(x) for x in (variable, m, v)]
        param, next_m, next_v = self._new_values(*values, grad, lr, iteration, excluded)
        m.assign(next_m)
        v.assign(next_v)
        variable.assign(param)

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        m, v = self._adam_m[index], self._adam_v[index]
        variable = _component(variable, None)
        self._compiled_update(
            variable,
            _component(m, variable),
            _component(v, variable),
            tf.cast(tf.convert_to_tensor(gradient), dtype),
            tf.cast(learning_rate, dtype),
            tf.convert_to_tensor(self.iterations),
            self._excluded_flags[index],
        )

    def get_config(self):
        config = super().get_config()
        config.pop("weight_decay", None)
        config.update(
            {
                "weight_decay_rate": self.weight_decay_rate,
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "exclude_from_weight_decay": self._exclude_patterns or None,
                "clip_norm": self.clip_norm,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="bert")
class AdamWeightDecay(_DecoupledDecayOptimizer):
    """Adam with decoupled weight decay, with the original BERT optimizer's exact arithmetic.

    Per variable: `m <- b1*m + (1-b1)*g`, `v <- b2*v + (1-b2)*g^2`,
    `update = m / (sqrt(v) + epsilon)` with no bias correction, plus `weight_decay_rate * param`
    unless the variable is excluded, then `param <- param - lr * update`. The slots are named
    `adam_m` and `adam_v`. A variable is excluded when any pattern of
    `exclude_from_weight_decay` is found (`re.search`) in its name, which is the Keras `path`
    without ':0' (the model names its layers so paths are the TF1 names, e.g.
    `bert/encoder/layer_0/attention/output/LayerNorm/gamma`) or `name_fn(variable)` if given.

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
        **kwargs: Other `keras.optimizers.Optimizer` arguments (e.g. `use_ema`).

    Raises:
        ValueError: If `weight_decay_rate` or `clip_norm` is out of range, or if `clip_norm`
            is combined with Keras' own clipping arguments or `weight_decay`.
    """

    default_weight_decay_rate = 0.0
    default_name = "AdamWeightDecay"

    def _new_values(self, param, m, v, grad, lr, iteration, excluded):
        next_m, next_v = self._next_moments(m, v, grad)
        update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if self.weight_decay_rate and not excluded:
            update += self.weight_decay_rate * param
        return param - lr * update, next_m, next_v

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
        variable = _component(variable, None)
        lr = tf.cast(learning_rate, dtype)
        if self.weight_decay_rate and not self._excluded_flags[index]:
            variable.assign_sub(variable * (lr * tf.cast(self.weight_decay_rate, dtype)))
        lr_factor, epsilon = self._kernel_constants()
        zero = tf.zeros([], dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=_component(m, variable).handle,
            v=_component(v, variable).handle,
            beta1_power=zero,
            beta2_power=zero,
            lr=lr * tf.cast(lr_factor, dtype),
            beta1=tf.cast(self.beta_1, dtype),
            beta2=tf.cast(self.beta_2, dtype),
            epsilon=tf.cast(epsilon, dtype),
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype),
        )


@keras.saving.register_keras_serializable(package="bert")
class Lamb(_DecoupledDecayOptimizer):
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
    return optimizers[optimizer_type](
        learning_rate=schedule,
        weight_decay_rate=weight_decay_rate,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=list(DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY),
        clip_norm=clip_norm,
    )
