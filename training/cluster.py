"""The multi-worker cluster of `TF_CONFIG`: parsing it and waiting for every worker to start.

TensorFlow's MultiWorkerMirroredStrategy blocks without a word while a worker of the cluster is
missing (for an hour, its registration timeout). Before the strategy starts, each worker here
listens on its own address and polls every other one until all answer or the timeout passes;
then it fails with the addresses that did not answer and the `TF_CONFIG` it read.
"""

import json
import os
import socket
import time

from absl import logging

# Jobs of a TF_CONFIG cluster whose tasks take part in every training step.
_TRAINING_JOBS = ("chief", "worker")


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
        for job in _TRAINING_JOBS
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
