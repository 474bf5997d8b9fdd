"""C++ notices that TF_CPP_MIN_LOG_LEVEL does not reach, held back as it holds back the others.

Two kinds of native code print to stderr around the TFLite export and runtime however the
variable is set: parts of TensorFlow that log through absl's C++ logging (the graph freezing and
the TFLite converter: "Number of eligible GPUs", "Ignored output_format", ...; absl prints every
message until `absl::InitializeLog()` is called, which nothing reachable from Python calls), and
the TFLite runtime's own minimal logger ("INFO: Created TensorFlow Lite XNNPACK delegate for
CPU."), which has no switch outside C++. `held_back_notices()` runs a block with the process's
stderr (file descriptor 2) going to a temporary file, then writes back every line except these
notices at the levels TF_CPP_MIN_LOG_LEVEL hides (1: INFO, 2: and WARNING, 3: and ERROR), so
that `TF_CPP_MIN_LOG_LEVEL=0` shows them all, as it shows TensorFlow's other notices.
"""

import contextlib
import os
import re
import sys
import tempfile

# Severity letter of a native notice, in the formats that reach stderr: absl's
# "I0000 00:00:1796608619.292546   32319 devices.cc:67] ...", TensorFlow's own
# "2026-01-01 00:00:00.000000: I tensorflow/core/util/port.cc:153] ..." and the TFLite minimal
# logger's "INFO: ..." (absl's "WARNING: All log messages before absl::InitializeLog() ..." too).
# Python's absl lines name a .py file, so they never match.
_NATIVE = (
    re.compile(rb"^([IWE])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [^ \]]+\.(?:cc|h|cpp):\d+\] "),
    re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWE]) [^ \]]+\.(?:cc|h|cpp):\d+\] "),
    re.compile(rb"^(INFO|WARNING|ERROR): "),
)
# TF_CPP_MIN_LOG_LEVEL's level that hides each severity.
_HIDDEN_FROM = {b"I": 1, b"W": 2, b"E": 3}


def min_log_level():
    """TF_CPP_MIN_LOG_LEVEL as TensorFlow reads it: 0 (everything) when unset or not a number."""
    try:
        return int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0"))
    except ValueError:
        return 0


def is_hidden(line, level):
    """True if `line` (bytes) is a native notice that `level` (TF_CPP_MIN_LOG_LEVEL) hides."""
    for pattern in _NATIVE:
        match = pattern.match(line)
        if match:
            return level >= _HIDDEN_FROM[match.group(1)[:1]]
    return False


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data) :]


@contextlib.contextmanager
def held_back_notices():
    """Runs the block with the native notices TF_CPP_MIN_LOG_LEVEL hides taken out of stderr
    (module docstring); everything else the block writes there follows once it ends.

    For blocks run before other threads write to stderr: their lines are held back too.
    """
    level = min_log_level()
    if level <= 0:
        # Everything is shown, as it comes (a crash inside the block loses nothing).
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held.read().splitlines(True) if not is_hidden(line, level)]
            _write_all(2, b"".join(kept))
