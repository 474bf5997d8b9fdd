"""The base of the decoupled-weight-decay optimizers (`modeling.optimization`): exclusions from
the decay, the `adam_m` / `adam_v` slots, clipping and the compiled per-variable update."""

import re

import keras
import tensorflow as tf

from modeling.lr_schedule import check_float


def _default_variable_name(variable):
    """The Keras `path` of a variable (its TF1 name in this project), without any ':0'."""
    name = getattr(variable, "path", None) or variable.name
    return re.sub(r":\d+$", "", name)


def component(variable, beside):
    """The tf.Variable that an update of `beside` on this device writes: for a Keras variable
    its backing variable, for a distributed one the copy on `beside`'s device."""
    value = variable.value if isinstance(variable, keras.Variable) else variable
    if beside is None or not tf.distribute.has_strategy():
        return value
    copies = tf.distribute.get_strategy().experimental_local_results(value)
    return next((c for c in copies if c.device == beside.device), copies[0])


class DecoupledDecayOptimizer(keras.optimizers.Optimizer):
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
        variable = component(variable, None)
        self._compiled_update(
            variable,
            component(m, variable),
            component(v, variable),
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
