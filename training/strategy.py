"""tf.distribute strategies from plain arguments, and which worker writes."""

import contextlib
import shutil
import tempfile

import tensorflow as tf
from absl import logging

from training import cluster

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


def _tpu_strategy(tpu, zone, project, num_tpu_cores):
    """A TPUStrategy on `tpu` (name or grpc:// address; "" = the local TPU), as the original's
    `TPUClusterResolver(tpu_name, zone=tpu_zone, project=gcp_project)`."""
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu or "", zone=zone, project=project
    )
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.TPUStrategy(resolver)
    cores = strategy.num_replicas_in_sync
    if num_tpu_cores is not None and num_tpu_cores != cores:
        raise ValueError(
            f"--num_tpu_cores={num_tpu_cores} but the TPU {tpu or '(local)'} has {cores} cores; "
            f"pass --num_tpu_cores={cores} or leave the flag out."
        )
    return strategy


def create_strategy(
    name="one_device",
    num_gpus=None,
    num_cpu_devices=None,
    tpu_address=None,
    tpu_zone=None,
    gcp_project=None,
    num_tpu_cores=None,
    multi_worker_timeout=300.0,
):
    """Builds the distribution strategy.

    Args:
        name: one of `STRATEGIES`.
            * `one_device`: the first GPU if there is one, else the CPU.
            * `mirrored`: all local GPUs (or the first `num_gpus`); without GPUs,
              `num_cpu_devices` logical CPU devices (for tests of the distributed path).
            * `multi_worker_mirrored`: the cluster in the `TF_CONFIG` environment variable;
              waits up to `multi_worker_timeout` seconds for every worker to start.
            * `tpu`: the TPU at `tpu_address` (name or grpc://host:port; "" = local), in
              `tpu_zone` of `gcp_project` for a TPU given by name.
        num_gpus: limit for `mirrored`.
        num_cpu_devices: logical CPU devices for `mirrored` when no GPU exists.
        tpu_address, tpu_zone, gcp_project: for `tpu`.
        num_tpu_cores: for `tpu`, the number of cores expected (None: whatever the TPU has).
        multi_worker_timeout: seconds a worker waits for the others of the cluster.

    Returns:
        A `tf.distribute.Strategy`.

    Raises:
        ValueError: for an unknown name, a missing or bad TF_CONFIG, workers that do not
            start in time, or a TPU with another number of cores.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown distribution strategy {name!r}; use one of {list(STRATEGIES)}.")
    if name == "multi_worker_mirrored":
        # Before TensorFlow starts its server: a missing worker is an error, not a silent hang.
        cluster.wait_for_workers(cluster.read_tf_config(), multi_worker_timeout)
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
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    else:
        strategy = _tpu_strategy(tpu_address, tpu_zone, gcp_project, num_tpu_cores)
    logging.info("Strategy %s with %d replica(s)", name, strategy.num_replicas_in_sync)
    return strategy


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


@contextlib.contextmanager
def worker_output_dir(strategy, output_dir):
    """Where this worker writes a run's files: `output_dir` on the chief (created), elsewhere
    a temporary directory removed at exit.

    Every worker runs the same steps (records of the examples, evaluation, prediction), but
    only the chief's files land in `output_dir`; the others' copies go away with the run.
    """
    if is_chief(strategy):
        tf.io.gfile.makedirs(output_dir)
        yield output_dir
        return
    scratch = tempfile.mkdtemp(prefix="bert-worker-")
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
