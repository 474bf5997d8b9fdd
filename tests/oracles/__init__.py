"""Reference programs that run Google's own BERT code in a separate process.

Each module in this package is a command-line script (``python -m tests.oracles.<name>``)
that builds a model with code nobody in this project wrote (the original TF1 release in the
``bert`` package, or Model Garden's TF2 ``BertEncoder``) and writes its outputs to files.
They run in a child process because the original code needs ``tf_keras`` and
``tf.compat.v1`` graph mode, which must not leak into the Keras 3 process of the tests.
"""

import logging
import os
import pathlib
import subprocess
import sys

_REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

# How much of a failed child's stderr to quote; TF prints long stacks before the real error.
_STDERR_TAIL_CHARS = 4000


def oracle_env() -> dict[str, str]:
    """Returns the environment an oracle process runs with.

    Returns:
        A copy of ``os.environ`` with legacy Keras selected (``tf.compat.v1.layers.dense``
        needs it), TensorFlow's C++ logging quietened and GPUs hidden, so that the
        reference numbers come from the CPU kernels.
    """
    env = dict(os.environ)
    env["TF_USE_LEGACY_KERAS"] = "1"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def run_oracle(module_name: str, args: list[str], timeout: float = 600) -> None:
    """Runs ``python -m tests.oracles.<module_name> *args`` in a child process.

    Args:
        module_name: Name of a module in this package, e.g. ``"original_bert"``.
        args: Command-line arguments passed to the module.
        timeout: Seconds to wait before giving up on the child.

    Raises:
        RuntimeError: If the child exits with a non-zero status or runs past ``timeout``;
            the message carries the tail of its stderr.
    """
    command = [sys.executable, "-m", f"tests.oracles.{module_name}", *map(str, args)]
    try:
        result = subprocess.run(
            command,
            cwd=_REPO_ROOT,
            env=oracle_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        stderr = err.stderr or b""
        if isinstance(stderr, bytes):
            stderr = stderr.decode("utf-8", errors="replace")
        raise RuntimeError(
            f"Oracle {module_name} timed out after {timeout} s.\n"
            f"stderr tail:\n{stderr[-_STDERR_TAIL_CHARS:]}"
        ) from err
    if result.returncode != 0:
        raise RuntimeError(
            f"Oracle {module_name} failed with exit status {result.returncode}: "
            f"{' '.join(command)}\nstderr tail:\n{result.stderr[-_STDERR_TAIL_CHARS:]}"
        )


class LogCollector(logging.Handler):
    """Keeps the messages of the log records it receives (attach it to the original's logger,
    "tensorflow"), for comparing our log lines with the original's."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def take(self):
        """Returns the messages received since the last call and forgets them."""
        messages, self.messages = self.messages, []
        return messages
