"""Runs the repository's command-line scripts in a subprocess, as a user would."""

import os
import subprocess

from tests.helpers.paths import REPO

# Quiet TensorFlow start-up logs; CPU only, so a test means the same on every machine.
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}


def run_in_repo(cmd, timeout=600):
    """Runs `cmd` (an argv list) from the repository root; returns the `CompletedProcess`
    with text stdout and stderr."""
    return subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=timeout)
