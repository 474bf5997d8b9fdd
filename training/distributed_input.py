"""Input under a strategy: one tf.data pipeline per worker (or TPU host), each feeding its
replicas their part of every global batch (see `data.records.input_pipeline.Batching`).

A dataset function here is `batching -> tf.data.Dataset`: it builds the task's reader for one
input pipeline. Training and the pre-training evaluation read endless streams of whole batches.
Evaluation and prediction sets are finite: on one worker the last batch may be short (variable
shapes, as the original on CPU and GPU); with several workers or a TPU, or when asked with
`--pad_to_whole_batches`, every batch has one static shape, the last one filled with examples
marked `is_real_example` = 0, which inference drops again (the original's TPU path).
"""

import tensorflow as tf

from data.records.input_pipeline import Batching


def num_workers(strategy):
    """Workers (hosts) taking part in every step: replicas in sync over local replicas."""
    local = len(strategy.extended.worker_devices)
    return max(strategy.num_replicas_in_sync // max(local, 1), 1)


def _is_tpu(strategy):
    return isinstance(strategy, tf.distribute.TPUStrategy)


def pad_to_whole_batches(strategy, requested=None):
    """Whether evaluation and prediction batches are padded to one static shape.

    Args:
        strategy: a `tf.distribute.Strategy`.
        requested: `--pad_to_whole_batches`; None decides from the strategy.

    Raises:
        ValueError: if variable shapes are requested where the strategy cannot run them.
    """
    needed = _is_tpu(strategy) or num_workers(strategy) > 1
    if requested is None:
        return needed
    if needed and not requested:
        raise ValueError(
            "--pad_to_whole_batches=false cannot be used with a TPU or several workers: every "
            "replica must run the same static batch shape. Leave the flag unset."
        )
    return bool(requested)


def input_in_background(strategy, is_training=False):
    """Whether input should be read on tf.data's background threads for this strategy.

    Always for training. For evaluation and prediction, not on one CPU replica: the model's
    compute already occupies every core, so input threads beside it only compete with it (on
    shared virtual machines, wall time then rises in 100 ms steps with CPU time unchanged).
    There, batches are read on the caller's thread; a parse costs well under 1% of a forward
    pass.
    """
    if is_training:
        return True
    devices = strategy.extended.worker_devices
    return len(devices) != 1 or tf.DeviceSpec.from_string(devices[0]).device_type != "CPU"


def whole_batches(strategy, dataset_fn, is_training, pad=False):
    """Iterates a dataset of whole batches as `strategy.run` expects it.

    Each input pipeline (one per worker or TPU host) builds `dataset_fn(batching)` and yields
    per-replica batches; the replicas of a step together hold one global batch, the same one
    one device would read.

    Args:
        strategy: a `tf.distribute.Strategy`.
        dataset_fn: `Batching -> tf.data.Dataset`.
        is_training: training input (always read on background threads).
        pad: the dataset is finite and its last batch is padded (inference).
    """
    background = input_in_background(strategy, is_training)
    if strategy.num_replicas_in_sync == 1 and not background:
        # One CPU replica takes plain tensors; a distributed iterator would add a prefetch thread.
        return iter(dataset_fn(Batching(pad_to_whole_batches=pad, background=False)))

    def pipeline(context):
        return dataset_fn(
            Batching(
                num_pipelines=context.num_input_pipelines,
                pipeline_index=context.input_pipeline_id,
                replicas=context.num_replicas_in_sync // context.num_input_pipelines,
                pad_to_whole_batches=pad,
                background=background,
            )
        )

    return iter(strategy.distribute_datasets_from_function(pipeline))


def inference_batches(strategy, dataset_fn, pad):
    """Iterates a finite evaluation or prediction set as `strategy.run` expects it.

    Args:
        strategy: a `tf.distribute.Strategy`.
        dataset_fn: `Batching -> tf.data.Dataset`.
        pad: every batch whole, the last one padded (`pad_to_whole_batches`); otherwise the
            last batch may be short, which only a single worker can run.
    """
    if pad:
        return whole_batches(strategy, dataset_fn, is_training=False, pad=True)
    background = input_in_background(strategy)
    dataset = dataset_fn(Batching(background=background))
    if not background:
        return iter(dataset)
    # One worker's replicas: the strategy splits each global batch, a short one included.
    return iter(strategy.experimental_distribute_dataset(dataset))
