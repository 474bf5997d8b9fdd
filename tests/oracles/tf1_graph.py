"""Helpers for running the original's `model_fn`s in ``tf.compat.v1`` graph mode."""

import types


class _EstimatorSpec:
    """Keeps the keyword arguments a `model_fn` builds its spec from (loss, train_op, ...)."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


def with_estimator(tf1):
    """``tf.compat.v1`` plus the members of ``estimator`` the original `model_fn`s read.

    TF 2 has no ``tf.compat.v1.estimator``; an original module's global ``tf`` is replaced by
    this view, whose ``estimator.ModeKeys`` are the TF1 values and whose
    ``estimator.tpu.TPUEstimatorSpec`` keeps what `model_fn` returns.
    """
    view = types.ModuleType("tf_compat_v1_with_estimator")
    view.estimator = types.SimpleNamespace(
        ModeKeys=types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer"),
        tpu=types.SimpleNamespace(TPUEstimatorSpec=_EstimatorSpec),
    )
    # Module-level __getattr__ (PEP 562): everything else is tf.compat.v1's own.
    view.__getattr__ = lambda name: getattr(tf1, name)
    return view


def read_global_step_before_increment(graph):
    """Orders every read of `global_step` before the original's `global_step.assign(+1)`.

    The original groups its increment with the update ops without a control dependency,
    so in graph mode the learning-rate read of `global_step` races the increment: now and
    then a step runs with the next step's rate (seen once in CI at step 7). The intended
    order, which training relies on, is read first; pinning it keeps the oracle exact.

    Args:
        graph: the `tf.Graph` holding the original's training op.

    Raises:
        RuntimeError: if the graph does not hold exactly one assignment of `global_step`.
    """
    import tensorflow as tf

    step = tf.compat.v1.train.get_global_step(graph)
    handle = step.handle.name
    ops = graph.get_operations()
    reads = [op for op in ops if op.type == "ReadVariableOp" and op.inputs[0].name == handle]
    assigns = [
        op
        for op in ops
        if op.type == "AssignVariableOp"
        and op.inputs[0].name == handle
        and op is not step.initializer
    ]
    if len(assigns) != 1 or not reads:
        raise RuntimeError(
            f"unexpected global_step graph: {len(assigns)} assigns, {len(reads)} reads"
        )
    for read in reads:
        if assigns[0] not in read.control_inputs:  # `assign()` re-reads the value it wrote
            # Private, but the only way to add an edge to an op that is already built.
            assigns[0]._add_control_input(read)
