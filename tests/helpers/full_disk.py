"""A real full disk for the tests: a tiny tmpfs that a command writes its output to.

As root the tmpfs is mounted on a directory of the test and unmounted afterwards; otherwise
the command runs in its own user and mount namespace (`unshare -Urm`), where the mount exists
only for it. Either way the test learns the files left on the disk from a listing taken after
the command, so it can assert that nothing was left under a final name.
"""

import os
import shutil
import subprocess

import pytest

from tests.helpers.scripts import ENV, REPO

# Mounts, runs "$@", lists what is left on the disk, and exits with the command's status.
_SCRIPT = (
    "disk=$1; size=$2; listing=$3; shift 3; "
    'mount -t tmpfs -o "size=$size" tmpfs "$disk" || exit 97; '
    '"$@"; status=$?; (cd "$disk" && find . -mindepth 1 -type f | sort) > "$listing"; '
    'umount "$disk"; exit $status'
)


class FullDisk:
    """A directory `path` that is a tmpfs of `size` (e.g. "64k") while `run` runs a command."""

    def __init__(self, root, size):
        self.path = str(root / "disk")
        self.size = size
        self._listing = str(root / "disk-listing.txt")
        os.makedirs(self.path)

    def run(self, cmd, timeout=300):
        """Runs `cmd` (argv) from the repository root with the disk mounted; returns the
        `CompletedProcess` (text output)."""
        prefix = ["sh", "-c", _SCRIPT, "sh", self.path, self.size, self._listing]
        if os.geteuid() != 0:
            prefix = ["unshare", "-Urm", *prefix]
        try:
            result = subprocess.run(
                prefix + [str(c) for c in cmd],
                cwd=REPO,
                env=ENV,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        finally:
            if os.geteuid() == 0 and os.path.ismount(self.path):
                subprocess.run(["umount", self.path], check=False)
        if result.returncode == 97:
            pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
        return result

    def files_left(self):
        """The files (relative paths) that were on the disk when the last command ended."""
        with open(self._listing) as f:
            return [line.strip()[2:] for line in f if line.strip()]


@pytest.fixture
def full_disk(tmp_path):
    """A `FullDisk` of 64 KiB (set `.size` before `run` for another size)."""
    if os.geteuid() != 0 and shutil.which("unshare") is None:
        pytest.skip("a full disk needs root or unshare(1)")
    return FullDisk(tmp_path, "64k")


def assert_no_space(result, path):
    """The command failed with the project's full-disk sentence naming `path` as its last line."""
    assert result.returncode == 1, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert ": error: No space left on the device while writing " + str(path) in last, last
