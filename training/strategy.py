"""tf.distribute strategies from plain arguments, and which worker writes.

The multi-worker cluster of `TF_CONFIG`: parsing it and waiting for every worker to start.

TensorFlow's MultiWorkerMirroredStrategy blocks without a word while a worker of the cluster is
missing (for an hour, its registration timeout). Before the strategy starts, each worker here
listens on its own address and polls every other one until all answer or the timeout passes;
then it fails with the addresses that did not answer and the `TF_CONFIG` it read.

A worker that dies or cannot be reached during the run stops the others with one sentence
(`training.peer_failures`, around everything `worker_output_dir` holds).
"""

import contextlib
import json
import os
import shutil
import socket
import tempfile
import time

import tensorflow as tf
from absl import logging

from fileio.errors import UserError
from training.peer_failures import TRAINING_JOBS, peer_failures_reported
from training.settings import STRATEGIES


def read_tf_config():
    """The parsed `TF_CONFIG` environment variable.

    Raises:
        ValueError: if it is missing, not JSON, or lacks the cluster or this task.
    """
    text = os.environ.get("TF_CONFIG")
    if not text:
        raise ValueError(
            "multi_worker_mirrored needs the TF_CONFIG environment variable describing the "
            'cluster, e.g. {"cluster": {"worker": ["host1:2222", "host2:2222"]}, '
            '"task": {"type": "worker", "index": 0}}.'
        )
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        # TensorFlow's own parse error names neither the variable nor the position.
        raise ValueError(
            f"The TF_CONFIG environment variable is not valid JSON ({err}): {text!r}."
        ) from None
    cluster, task = config.get("cluster"), config.get("task")
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ValueError(f'TF_CONFIG needs "cluster" and "task" entries: {text!r}.')
    addresses = cluster.get(task.get("type"), [])
    index = task.get("index", 0)
    if not isinstance(index, int) or not 0 <= index < len(addresses):
        raise ValueError(
            f"TF_CONFIG's task {task!r} is not in its cluster {cluster!r}: each worker sets "
            "its own task type and index."
        )
    return config


def _peers(config):
    """(own address, [other training tasks' addresses]) of a parsed TF_CONFIG."""
    task = config["task"]
    own = config["cluster"][task["type"]][task.get("index", 0)]
    others = [
        address
        for job in TRAINING_JOBS
        for i, address in enumerate(config["cluster"].get(job, []))
        if (job, i) != (task["type"], task.get("index", 0))
    ]
    return own, others


def _split_address(address):
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _answers(address):
    try:
        with socket.create_connection(_split_address(address), timeout=1.0):
            return True
    except OSError:
        return False


def wait_for_workers(config, timeout_s, poll_s=0.2):
    """Blocks until every other training task of `config` accepts a connection.

    This worker listens on its own port meanwhile, so that the others can see it before its
    TensorFlow server starts (the server takes the port over once this returns).

    Args:
        config: the parsed `TF_CONFIG`.
        timeout_s: seconds to wait in all.
        poll_s: seconds between rounds of polling.

    Raises:
        ValueError: if this worker's port is taken, or some address did not answer in time.
    """
    own, others = _peers(config)
    if not others:
        return
    _, port = _split_address(own)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("", port))
    except OSError as err:
        listener.close()
        raise ValueError(
            f"This worker's address {own} (TF_CONFIG task {config['task']}) cannot be used: "
            f"{err}. Another process holds port {port}; stop it or change TF_CONFIG."
        ) from None
    listener.listen(64)
    deadline = time.monotonic() + timeout_s
    missing = list(others)
    try:
        while missing:
            missing = [address for address in missing if not _answers(address)]
            if missing and time.monotonic() > deadline:
                raise ValueError(
                    f"Worker(s) {', '.join(missing)} did not answer within {timeout_s:g} s "
                    f"(--multi_worker_timeout). Start every worker of the cluster, and check "
                    f"that each address is reachable from this host. "
                    f"TF_CONFIG={os.environ.get('TF_CONFIG')}"
                )
            if missing:
                time.sleep(poll_s)
    finally:
        listener.close()
    logging.info("All %d other worker(s) of the cluster answered.", len(others))


def check_gpu_request(name, num_gpus, num_cpu_devices, visible_gpus):
    """Refuses a GPU strategy that this machine cannot run, before anything is written.

    `mirrored` (or `--num_gpus=N`, which selects it) runs on GPUs. Where TensorFlow sees none,
    the usual cause is the CPU-only install or a missing driver, and replicas on the CPU would
    only hide that, so they run only when `num_cpu_devices` is given (a testing aid).

    Args:
        name: the strategy's name, one of `STRATEGIES`.
        num_gpus: the GPUs asked for (None: all that are visible).
        num_cpu_devices: logical CPU replicas allowed when no GPU is visible (None: none).
        visible_gpus: how many GPUs TensorFlow lists.

    Raises:
        UserError: no GPU visible without `num_cpu_devices`, more GPUs asked for than visible,
            or a `num_gpus` below 1.
    """
    if name != "mirrored":
        return
    if num_gpus is not None and num_gpus < 1:
        raise UserError(
            f"--num_gpus={num_gpus} is not a number of GPUs: pass 1 or more, or leave the flag "
            "out to run on one device."
        )
    if visible_gpus == 0:
        if num_cpu_devices is not None and num_cpu_devices < 1:
            raise UserError(
                f"--num_cpu_devices={num_cpu_devices} is not a number of devices: pass 1 or more."
            )
        if num_cpu_devices is not None:
            return
        asked = "--strategy=mirrored" if num_gpus is None else f"--num_gpus={num_gpus}"
        raise UserError(
            f"{asked} asks for GPUs but TensorFlow sees none on this machine: install GPU "
            "support with `pip install -r requirements-gpu.txt` (or run the container of "
            "docs/gpu_and_containers.md), check that `nvidia-smi` lists the GPUs (if not, "
            "install the NVIDIA driver) and that CUDA_VISIBLE_DEVICES does not hide them, or "
            "pass --num_cpu_devices=N to test on N replicas on the CPU."
        )
    if num_gpus is not None and num_gpus > visible_gpus:
        raise UserError(
            f"--num_gpus={num_gpus} asks for {num_gpus} GPUs but TensorFlow sees "
            f"{visible_gpus} on this machine: pass --num_gpus={visible_gpus} or fewer "
            "(--strategy=mirrored alone uses all of them)."
        )


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
    collective_timeout=None,
):
    """Builds the distribution strategy.

    Args:
        name: one of `STRATEGIES`.
            * `one_device`: the first GPU if there is one, else the CPU.
            * `mirrored`: all local GPUs (or the first `num_gpus`); without GPUs, an error
              unless `num_cpu_devices` is given: that many logical CPU devices (for tests of
              the distributed path).
            * `multi_worker_mirrored`: the cluster in the `TF_CONFIG` environment variable;
              waits up to `multi_worker_timeout` seconds for every worker to start.
            * `tpu`: the TPU at `tpu_address` (name or grpc://host:port; "" = local), in
              `tpu_zone` of `gcp_project` for a TPU given by name.
        num_gpus: limit for `mirrored`.
        num_cpu_devices: logical CPU devices for `mirrored` when no GPU exists (None: no GPU
            is an error).
        tpu_address, tpu_zone, gcp_project: for `tpu`.
        num_tpu_cores: for `tpu`, the number of cores expected (None: whatever the TPU has).
        multi_worker_timeout: seconds a worker waits for the others of the cluster.
        collective_timeout: for `multi_worker_mirrored`, seconds a collective op may wait for
            the other workers before the run stops (None: as long as it takes).

    Returns:
        A `tf.distribute.Strategy`.

    Raises:
        ValueError: for an unknown name, GPUs asked for that are not there (see
            `check_gpu_request`), a missing or bad TF_CONFIG, workers that do not start in
            time, or a TPU with another number of cores.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown distribution strategy {name!r}; use one of {list(STRATEGIES)}.")
    if name == "multi_worker_mirrored":
        # Before TensorFlow starts its server: a missing worker is an error, not a silent hang.
        wait_for_workers(read_tf_config(), multi_worker_timeout)
    # Physical devices first: listing logical ones would fix the CPU layout too early.
    visible_gpus = len(tf.config.list_physical_devices("GPU"))
    check_gpu_request(name, num_gpus, num_cpu_devices, visible_gpus)
    has_gpu = visible_gpus > 0
    if name == "mirrored" and not has_gpu:
        cpu_devices = _ensure_logical_cpus(num_cpu_devices)
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
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                timeout_seconds=collective_timeout
            )
        )
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
    with peer_failures_reported(strategy, output_dir, read_tf_config):
        if is_chief(strategy):
            tf.io.gfile.makedirs(output_dir)
            yield output_dir
            return
        scratch = tempfile.mkdtemp(prefix="bert-worker-")
        try:
            yield scratch
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
