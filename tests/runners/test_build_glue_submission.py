"""build_glue_submission.py as a user runs it, on a full-size set of leaderboard files."""

import os
import sys
import zipfile

from tests.data.glue.test_submission import write_complete_set
from tests.helpers.scripts import REPO, run_in_repo


def _run(*args):
    return run_in_repo([sys.executable, os.path.join(REPO, "build_glue_submission.py"), *args])


def test_command_line(tmp_path):
    # The official test-set sizes: the command checks against them.
    write_complete_set(tmp_path / "out", rows=None)
    target = str(tmp_path / "submission.zip")
    common = ["--input_dir", str(tmp_path / "out"), "--output_file", target]
    result = _run(*common)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "with 11 files" in result.stderr
    with zipfile.ZipFile(target) as archive:
        assert len(archive.namelist()) == 11
    os.remove(tmp_path / "out" / "WNLI.tsv")
    os.remove(target)
    result = _run(*common)
    assert result.returncode == 1
    assert "WNLI.tsv" in result.stderr and not os.path.exists(target)
    result = _run(*common, "--allow_partial")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "missing: WNLI" in result.stderr


def test_empty_directory_is_refused(tmp_path):
    result = _run("--input_dir", str(tmp_path), "--output_file", str(tmp_path / "s.zip"))
    assert result.returncode == 1
    assert "Missing 11 of 11 files" in result.stderr and "CoLA.tsv, SST-2.tsv" in result.stderr
    assert not os.path.exists(tmp_path / "s.zip")
