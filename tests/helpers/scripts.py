"""Runs the repository's command-line scripts in a process of their own, as a user would."""

import os

from tests.helpers.paths import REPO
from tests.helpers.warm_runner import WarmRunner

# Quiet TensorFlow start-up logs; CPU only, so a test means the same on every machine.
# PEER_ENV is the test environment as installed, for benchmarks whose peers (Model Garden) need
# its libraries; ENV starts the project's scripts with the libraries of a user's install
# (user_install/sitecustomize.py).
PEER_ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
_USER_INSTALL = os.path.join(REPO, "tests", "helpers", "user_install")
ENV = {
    **PEER_ENV,
    "PYTHONPATH": os.pathsep.join(p for p in (_USER_INSTALL, os.environ.get("PYTHONPATH")) if p),
}


_WARM = WarmRunner(ENV)


def run_in_repo(cmd, timeout=600, env=ENV):
    """Runs `cmd` (an argv list) from the repository root, in `env`; returns the
    `CompletedProcess` with text stdout and stderr.

    A Python script starts as a fork of a process that has TensorFlow loaded already
    (`tests/helpers/warm_runner.py`): a process of its own like `subprocess.run`'s, without
    paying TensorFlow's start-up again.
    """
    return _WARM.run(cmd, cwd=REPO, env=env, timeout=timeout)


def start_in_repo(cmd, env=ENV, stdout=None, stderr=None, start_new_session=False):
    """Starts `cmd` from the repository root without waiting, as `subprocess.Popen(cmd,
    text=True, ...)` would (`stdout` and `stderr` each PIPE, DEVNULL or None): for runs that
    tests watch, signal or run side by side. A Python script is forked warm, as in
    `run_in_repo`; the handle answers `poll`, `wait`, `communicate`, `send_signal` and `kill`,
    and its `pid` heads its own process group."""
    return _WARM.start(
        cmd,
        cwd=REPO,
        env=env,
        stdout=stdout,
        stderr=stderr,
        start_new_session=start_new_session,
    )
