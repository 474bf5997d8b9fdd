"""The sentence a worker of a multi-worker run ends with when a peer fails, from the errors
TensorFlow raises then (their text as TensorFlow 2.20 writes it)."""

import pytest
import tensorflow as tf

from fileio.errors import UserError
from training.peer_failures import failed_peers, is_peer_failure, peer_failure_error

CLUSTER = {"worker": ["10.0.0.1:2222", "10.0.0.2:2222", "10.0.0.3:2222"]}
# A survivor's collective when worker 2 was killed (TensorFlow's text, trimmed).
RESET = (
    "Graph execution error:\n\nDetected at node while/CollectiveReduceV2_1 defined at ...\n"
    "Collective ops is aborted by: recvmsg:Connection reset by peer\n"
    "Additional GRPC error information from remote target /job:worker/replica:0/task:2 while "
    "calling /tensorflow.WorkerService/RecvBuf:\n"
    "The error could be from a previous operation. Restart your program to reset.\n"
)


def _config(index):
    return {"cluster": CLUSTER, "task": {"type": "worker", "index": index}}


def test_the_peer_named_by_the_error_the_last_checkpoint_and_what_to_do(tmp_path):
    (tmp_path / "model.ckpt-5.index").write_bytes(b"")
    (tmp_path / "model.ckpt-10.index").write_bytes(b"")
    err = tf.errors.UnavailableError(None, None, RESET)
    assert is_peer_failure(err)
    error = peer_failure_error(err, _config(0), str(tmp_path))
    assert isinstance(error, UserError)
    assert str(error) == (
        "Worker 10.0.0.3:2222 (worker 2) of the multi-worker cluster failed or cannot be "
        "reached (recvmsg:Connection reset by peer); the last "
        f"checkpoint in {tmp_path} is step 10: run every worker's command again to resume "
        "from it."
    )


def test_a_peer_without_heartbeats():
    text = (
        "Collective ops is aborted by: Error reported from /job:worker/task:2: The following "
        "tasks are unhealthy (stopped sending heartbeats):\n/job:worker/replica:0/task:1\n"
    )
    err = tf.errors.UnavailableError(None, None, text)
    # Worker 2 reported it; worker 1 failed.
    assert failed_peers(err, _config(0)) == ["10.0.0.2:2222 (worker 1)"]


def test_without_a_named_peer_or_a_checkpoint(tmp_path):
    err = tf.errors.DeadlineExceededError(
        None, None, "Graph execution error:\n\nCollective has timed out during execution.\n"
    )
    assert failed_peers(err, _config(1)) == ["10.0.0.1:2222 (worker 0)", "10.0.0.3:2222 (worker 2)"]
    assert str(peer_failure_error(err, _config(1), str(tmp_path / "out"))) == (
        "Workers 10.0.0.1:2222 (worker 0), 10.0.0.3:2222 (worker 2) of the multi-worker cluster "
        "did not answer within --collective_timeout (Collective has timed out during "
        f"execution); no checkpoint has been written to {tmp_path / 'out'} yet: run every "
        "worker's command again to start over."
    )


@pytest.mark.parametrize(
    "err",
    [
        tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [8,32] vs. [8,16]"),
        tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor"),
        # A bad shape in the all-reduce itself names the collective op, not a peer.
        tf.errors.InvalidArgumentError(
            None, None, "Detected at node while/CollectiveReduceV2_1: Shape mismatch"
        ),
    ],
)
def test_other_errors_are_not_peer_failures(err):
    assert not is_peer_failure(err)
    assert is_peer_failure(tf.errors.CancelledError(None, None, RESET))
