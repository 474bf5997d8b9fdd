"""fileio/errors.py: every failure of a command ends in one sentence on the last line of stderr."""

import subprocess
import sys
import textwrap

import pytest

from tests.helpers.paths import REPO

_SCRIPT = textwrap.dedent(
    """
    import errno, sys
    from fileio.errors import UserError, run_command

    def main(argv):
        kind = argv[1]
        if kind == "user":
            raise UserError("corpus.txt line 3 is empty: remove it.")
        if kind == "nospace":
            raise OSError(errno.ENOSPC, "No space left on device", "/data/out.tfrecord")
        if kind == "dataloss":
            import tensorflow as tf
            raise tf.errors.DataLossError(None, None, "corrupted record at 12")
        if kind == "bug":
            return [][1]
        print("ok")

    run_command(main)
    """
)


def _run(kind):
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, kind], cwd=REPO, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "kind, last_line",
    [
        ("user", "-c: error: corpus.txt line 3 is empty: remove it."),
        ("nospace", "-c: error: No space left on the device while writing /data/out.tfrecord"),
        ("dataloss", "-c: error: A file is damaged or truncated (corrupted record at 12)"),
        ("bug", "-c: error: internal error (IndexError: list index out of range); this is a bug"),
    ],
)
def test_the_last_line_is_one_sentence(kind, last_line):
    result = _run(kind)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(last_line), result.stderr
    # A user's error shows no traceback; a bug keeps its traceback above the sentence.
    assert ("Traceback" in result.stderr) == (kind == "bug")


def test_success_is_untouched():
    result = _run("fine")
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr
