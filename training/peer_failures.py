"""A peer lost in the middle of a multi-worker run, told as one sentence.

A worker that dies or cannot be reached during the run makes the others' next collective fail:
at once for a dead process, whose connections close; within TensorFlow's heartbeat timeout
(about 10 s) for a process that stops or a host that vanishes; after `--collective_timeout`
seconds, where set, for a worker that still sends heartbeats but never reaches the next step.
`peer_failures_reported` turns that error into one sentence: which peer, the last checkpoint in
the output directory, and that rerunning every worker's command resumes from it.
"""

import contextlib
import re

import tensorflow as tf
from absl import logging

from fileio.errors import UserError
from training.checkpointer import list_checkpoints

# Jobs of a TF_CONFIG cluster whose tasks take part in every training step.
TRAINING_JOBS = ("chief", "worker")
# How TensorFlow's errors name a task of the cluster: "/job:worker/replica:0/task:1" or
# "/job:worker/task:1".
_TASK_NAME = re.compile(r"/job:(\w+)(?:/replica:\d+)?/task:(\d+)")
# Words of the other errors that a collective aborted by a failed peer ends with (a node name
# such as CollectiveReduceV2 alone says nothing: any error of that op carries it).
_PEER_WORDS = re.compile(
    r"collective ops is aborted|heartbeat|coordination service|connection reset|socket closed",
    re.I,
)


def is_peer_failure(err):
    """Whether `err` (raised on a worker of a multi-worker run) says that a peer failed."""
    if isinstance(err, (tf.errors.UnavailableError, tf.errors.DeadlineExceededError)):
        return True
    return isinstance(err, tf.errors.OpError) and bool(_PEER_WORDS.search(str(err)))


def _reason(err):
    """The line of a TensorFlow error that says why (its first line is often only "Graph
    execution error:")."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    for line in lines:
        if re.search(r"aborted by|timed out|heartbeat", line, re.I):
            return line.partition("aborted by: ")[2].rstrip(".:") or line.rstrip(".:")
    return lines[0].rstrip(".:") if lines else type(err).__name__


def failed_peers(err, config):
    """The peers `err` names, as "address (job i)"; all the other training tasks when it names
    none (it often does not: the survivor's collective only sees its ring broken)."""
    own = (config["task"]["type"], config["task"].get("index", 0))
    cluster = config["cluster"]
    text = str(err)
    # A heartbeat failure lists the unhealthy tasks after the task that reported it.
    text = text.partition("stopped sending heartbeats")[2] or text
    named = []
    for job, index in _TASK_NAME.findall(text):
        task = (job, int(index))
        if task != own and task not in named and task[1] < len(cluster.get(job, [])):
            named.append(task)
    if not named:
        named = [
            (job, i)
            for job in TRAINING_JOBS
            for i in range(len(cluster.get(job, [])))
            if (job, i) != own
        ]
    return [f"{cluster[job][i]} ({job} {i})" for job, i in named]


def peer_failure_error(err, config, output_dir):
    """The `UserError` for a peer failure `err`: who, the last checkpoint, and what to do."""
    peers = failed_peers(err, config)
    who = f"Worker{'s' if len(peers) > 1 else ''} {', '.join(peers)}"
    if isinstance(err, tf.errors.DeadlineExceededError):
        what = f"did not answer within --collective_timeout ({_reason(err)})"
    else:
        what = f"failed or cannot be reached ({_reason(err)})"
    checkpoints = list_checkpoints(output_dir) if tf.io.gfile.isdir(output_dir) else []
    if checkpoints:
        step = checkpoints[-1].rsplit("-", 1)[-1]
        after = (
            f"the last checkpoint in {output_dir} is step {step}: run every worker's command "
            "again to resume from it."
        )
    else:
        after = (
            f"no checkpoint has been written to {output_dir} yet: run every worker's command "
            "again to start over."
        )
    return UserError(f"{who} of the multi-worker cluster {what}; {after}")


@contextlib.contextmanager
def peer_failures_reported(strategy, output_dir, read_tf_config):
    """Raises `peer_failure_error` for a peer failure of a multi-worker run inside.

    Args:
        strategy: the run's strategy; only a MultiWorkerMirroredStrategy has peers.
        output_dir: the run's --output_dir, where the checkpoints are.
        read_tf_config: returns the parsed `TF_CONFIG` (`training.strategy.read_tf_config`).
    """
    try:
        yield
    except tf.errors.OpError as err:
        multi_worker = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
        if not (multi_worker and is_peer_failure(err)):
            raise
        logging.debug("The peer failure:", exc_info=True)
        raise peer_failure_error(err, read_tf_config(), output_dir) from None
