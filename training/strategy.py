"""tf.distribute strategies from plain arguments."""

import json
import os

import tensorflow as tf
from absl import logging

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def _ensure_logical_cpus(count):
    """Splits the host CPU into `count` logical devices (before TF initialises them)."""
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * count
        )
    except RuntimeError:
        # Devices were initialised earlier in this process; what exists is checked below.
        pass
    devices = [d.name for d in tf.config.list_logical_devices("CPU")][:count]
    if len(devices) < count:
        raise ValueError(
            f"Could not create {count} logical CPU devices (TensorFlow's devices were already "
            "initialised); create the strategy before any other TensorFlow work."
        )
    return devices


def create_strategy(name="one_device", num_gpus=None, num_cpu_devices=None, tpu_address=None):
    """Builds the distribution strategy.

    Args:
        name: one of `STRATEGIES`.
            * `one_device`: the first GPU if there is one, else the CPU.
            * `mirrored`: all local GPUs (or the first `num_gpus`); without GPUs,
              `num_cpu_devices` logical CPU devices (for tests of the distributed path).
            * `multi_worker_mirrored`: the cluster in the `TF_CONFIG` environment variable.
            * `tpu`: the TPU at `tpu_address` (name or grpc://host:port; "" = local).
        num_gpus: limit for `mirrored`.
        num_cpu_devices: logical CPU devices for `mirrored` when no GPU exists.
        tpu_address: for `tpu`.

    Returns:
        A `tf.distribute.Strategy`.

    Raises:
        ValueError: for an unknown name or a missing TF_CONFIG.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown distribution strategy {name!r}; use one of {list(STRATEGIES)}.")
    # Physical devices first: listing logical ones would fix the CPU layout too early.
    has_gpu = bool(tf.config.list_physical_devices("GPU"))
    if name == "mirrored" and not has_gpu:
        cpu_devices = _ensure_logical_cpus(num_cpu_devices or 1)
    gpus = [d.name for d in tf.config.list_logical_devices("GPU")] if has_gpu else []
    if name == "one_device":
        device = gpus[0] if gpus else "/cpu:0"
        strategy = tf.distribute.OneDeviceStrategy(device)
    elif name == "mirrored":
        if gpus:
            devices = gpus[:num_gpus] if num_gpus else gpus
        else:
            devices = cpu_devices
        strategy = tf.distribute.MirroredStrategy(
            devices, cross_device_ops=None if gpus else tf.distribute.ReductionToOneDevice()
        )
    elif name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            raise ValueError(
                "multi_worker_mirrored needs the TF_CONFIG environment variable describing the "
                'cluster, e.g. {"cluster": {"worker": ["host1:2222", "host2:2222"]}, '
                '"task": {"type": "worker", "index": 0}}.'
            )
        try:
            json.loads(os.environ["TF_CONFIG"])
        except json.JSONDecodeError as err:
            # TensorFlow's own parse error names neither the variable nor the position.
            raise ValueError(
                f"The TF_CONFIG environment variable is not valid JSON ({err}): "
                f"{os.environ['TF_CONFIG']!r}."
            ) from None
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    else:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    logging.info("Strategy %s with %d replica(s)", name, strategy.num_replicas_in_sync)
    return strategy


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


def inference_batches(strategy, dataset):
    """Iterates a finite evaluation or prediction dataset as `strategy.run` expects it."""
    if input_in_background(strategy):
        return iter(strategy.experimental_distribute_dataset(dataset))
    # One CPU replica takes plain tensors; the distributed iterator would add a prefetch thread.
    return iter(dataset)


def is_chief(strategy):
    """True on the worker that writes checkpoints and summaries."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.cluster_spec().as_dict():
        return True
    return resolver.task_type in (None, "chief") or (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and "chief" not in resolver.cluster_spec().as_dict()
    )
