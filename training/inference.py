"""Batched inference under a strategy: the one path for evaluation, prediction and extraction.

`Trainer.predict` (classifier and SQuAD evaluation and prediction) and extract_features.py both
run a compiled forward step over a finite dataset with `predictions`; the first collects the
outputs, the second streams them to its output file batch by batch.
"""

import numpy as np
import tensorflow as tf

from training.strategy import inference_batches


def make_predict_step(strategy, outputs_fn, use_xla=False):
    """Compiles `outputs_fn` as one inference step over a global batch.

    Args:
        strategy: a `tf.distribute.Strategy`.
        outputs_fn: `features -> dict of [batch, ...] tensors`, run on each replica.
        use_xla: compile the replica's computation with XLA (once per batch shape: the full
            batches and a short last one).

    Returns:
        A function `global batch -> dict of [global batch, ...] tensors`.
    """
    replica_fn = tf.function(outputs_fn, jit_compile=True) if use_xla else outputs_fn

    @tf.function
    def predict_step(batch):
        per_replica = strategy.run(replica_fn, args=(batch,))
        return {
            name: tf.concat(strategy.experimental_local_results(value), axis=0)
            for name, value in per_replica.items()
        }

    return predict_step


def predictions(strategy, predict_step, dataset):
    """Runs `predict_step` over every batch of a finite dataset, in order.

    Yields:
        dict name -> np.ndarray `[batch, ...]` per batch.
    """
    for batch in inference_batches(strategy, dataset):
        yield {name: value.numpy() for name, value in predict_step(batch).items()}


def collect(batches):
    """Concatenates the per-batch outputs of `predictions`: dict name -> np.ndarray [N, ...]."""
    collected = {}
    for outputs in batches:
        for name, value in outputs.items():
            collected.setdefault(name, []).append(value)
    return {name: np.concatenate(parts) for name, parts in collected.items()}
