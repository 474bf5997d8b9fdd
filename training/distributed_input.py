"""Input under a strategy: one tf.data pipeline per worker (or TPU host), each feeding its
replicas their part of every global batch (see `data.records.batching.Batching`), cut to a
length bucket unless `--pad_to_max_seq_length` or a TPU asks for the full length.

A dataset function here is `batching -> tf.data.Dataset`: it builds the task's reader for one
input pipeline. Training and the pre-training evaluation read endless streams of whole batches.
Evaluation and prediction sets are finite: on one worker the last batch may be short (variable
shapes, as the original on CPU and GPU); with several workers or a TPU, or when asked with
`--pad_to_whole_batches`, every batch has one static shape, the last one filled with examples
marked `is_real_example` = 0, which inference drops again (the original's TPU path).
"""

import dataclasses

import tensorflow as tf

from data.records.batching import Batching


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
    compute already occupies every core, so input threads beside it only compete with it.
    There, batches are read on the caller's thread; a parse costs well under 1% of a forward
    pass.
    """
    if is_training:
        return True
    return len(strategy.extended.worker_devices) != 1 or not _on_cpu(strategy)


def _on_cpu(strategy):
    devices = strategy.extended.worker_devices
    return all(tf.DeviceSpec.from_string(d).device_type == "CPU" for d in devices)


def _without_autotuning(dataset):
    """`dataset` without tf.data's autotuning thread.

    That thread sleeps in doubling periods (10 ms up to a minute), and deleting an iterator
    waits out the current one: every finished training run, evaluation or prediction pass
    stood idle for up to a minute (measured: 4-34 s after 20-80 training steps, up to 5 s
    after a 10 s prediction). Parallel parsing keeps its AUTOTUNE setting, which without the
    thread means one call per core.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def _on_caller_thread(dataset):
    """An iterator of `dataset` for the caller's thread (tf.data threads only where the
    dataset itself runs them: training's parallel parse and prefetch)."""
    return iter(_without_autotuning(dataset))


def batches_cut_to_length(strategy, pad_to_max_seq_length=False):
    """Whether batches are cut to length buckets: unless asked not to, and never on a TPU,
    whose compiled steps need one static sequence length."""
    return not pad_to_max_seq_length and not _is_tpu(strategy)


def whole_batches(strategy, dataset_fn, is_training, options=None):
    """Iterates a dataset of whole batches as `strategy.run` expects it.

    Each input pipeline (one per worker or TPU host) builds `dataset_fn(batching)` and yields
    per-replica batches; the replicas of a step together hold one global batch, the same one
    one device would read.

    Args:
        strategy: a `tf.distribute.Strategy`.
        dataset_fn: `Batching -> tf.data.Dataset`.
        is_training: training input (always read on background threads).
        options: a `Batching` whose padding, trimming and sorting settings apply; the
            pipeline fields are filled in here.
    """
    options = dataclasses.replace(
        options or Batching(), background=input_in_background(strategy, is_training)
    )
    if strategy.num_replicas_in_sync == 1 and _on_cpu(strategy):
        # One CPU replica takes plain tensors: a distributed iterator would add a prefetch
        # thread and a pipeline of its own, whose autotuning held every finished run idle.
        return _on_caller_thread(dataset_fn(options))

    def pipeline(context):
        return _without_autotuning(
            dataset_fn(
                dataclasses.replace(
                    options,
                    num_pipelines=context.num_input_pipelines,
                    pipeline_index=context.input_pipeline_id,
                    replicas=context.num_replicas_in_sync // context.num_input_pipelines,
                )
            )
        )

    return iter(strategy.distribute_datasets_from_function(pipeline))


def inference_batches(strategy, dataset_fn, options):
    """Iterates a finite evaluation or prediction set as `strategy.run` expects it.

    Args:
        strategy: a `tf.distribute.Strategy`.
        dataset_fn: `Batching -> tf.data.Dataset`.
        options: a `Batching` with the padding, trimming and sorting settings. Without
            `pad_to_whole_batches` the last batch may be short, which only a single worker
            can run.
    """
    if options.pad_to_whole_batches:
        return whole_batches(strategy, dataset_fn, is_training=False, options=options)
    options = dataclasses.replace(options, background=input_in_background(strategy))
    dataset = dataset_fn(options)
    if not options.background:
        return _on_caller_thread(dataset)
    # One worker's replicas: the strategy splits each global batch, a short one included.
    return iter(strategy.experimental_distribute_dataset(_without_autotuning(dataset)))
