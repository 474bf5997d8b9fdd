"""test_results.tsv, GLUE leaderboard files and the submission zip."""

import os
import shutil
import zipfile

import numpy as np
import pytest

from data.glue import submission
from data.glue.processors import get_processor
from data.glue.submission import (
    OFFICIAL_TEST_SIZES,
    build_submission,
    write_leaderboard_file,
    write_test_results,
)

# A fake official set: 3 rows per file.
SMALL = dict.fromkeys(OFFICIAL_TEST_SIZES, 3)
TASKS = {"CoLA": "cola", "SST-2": "sst2", "MRPC": "mrpc", "STS-B": "stsb", "QQP": "qqp",
         "MNLI-m": "mnli", "MNLI-mm": "mnli", "QNLI": "qnli", "RTE": "rte", "WNLI": "wnli",
         "AX": "ax"}  # fmt: skip


def test_official_sizes_and_tasks():
    # Test-split sizes of the GLUE release (huggingface/datasets glue dataset_infos.json).
    assert OFFICIAL_TEST_SIZES == {
        "CoLA": 1063, "SST-2": 1821, "MRPC": 1725, "STS-B": 1379, "QQP": 390965,
        "MNLI-m": 9796, "MNLI-mm": 9847, "QNLI": 5463, "RTE": 3000, "WNLI": 146, "AX": 1104,
    }  # fmt: skip
    assert submission.LEADERBOARD_TASKS == TASKS
    for name, task in TASKS.items():
        assert name in get_processor(task).leaderboard_names


def test_test_results_format(tmp_path):
    path = tmp_path / "test_results.tsv"
    probabilities = np.array([[0.1, 0.9], [1 / 3, 2 / 3], [1e-8, 1.0]], dtype=np.float32)
    write_test_results(str(path), probabilities)
    # str() of numpy float32 values: the shortest text that reads back to the same float32.
    assert path.read_bytes() == b"0.1\t0.9\n0.33333334\t0.6666667\n1e-08\t1.0\n"
    write_test_results(str(path), np.array([2.5, 0.125]))  # one output (regression)
    assert path.read_text() == "2.5\n0.125\n"
    write_test_results(str(path), np.zeros([0, 3]))
    assert path.read_text() == ""
    assert os.listdir(tmp_path) == ["test_results.tsv"]


def test_leaderboard_files(tmp_path):
    path = str(tmp_path / "X.tsv")
    write_leaderboard_file(path, np.array([2, 0, 1, 1]), get_processor("mnli"))
    assert open(path).read() == (
        "index\tprediction\n0\tneutral\n1\tcontradiction\n2\tentailment\n3\tentailment\n"
    )
    write_leaderboard_file(path, [1, 0], get_processor("qnli"))
    assert open(path).read() == "index\tprediction\n0\tnot_entailment\n1\tentailment\n"
    write_leaderboard_file(path, [1, 0, 1], get_processor("CoLA"))
    assert open(path).read() == "index\tprediction\n0\t1\n1\t0\n2\t1\n"
    scores = np.array([[-0.4], [2.34567], [5.2], [4.9996]], dtype=np.float32)
    write_leaderboard_file(path, scores, get_processor("sts-b"))
    assert open(path).read() == "index\tprediction\n0\t0.000\n1\t2.346\n2\t5.000\n3\t5.000\n"
    probabilities = np.array([[0.2, 0.7, 0.1], [0.5, 0.2, 0.3]], dtype=np.float32)
    write_leaderboard_file(path, probabilities, get_processor("ax"))
    assert open(path).read() == "index\tprediction\n0\tentailment\n1\tcontradiction\n"
    with pytest.raises(ValueError, match=r"Predicted class ids \[2\] are not classes of rte"):
        write_leaderboard_file(path, [0, 2], get_processor("rte"))
    with pytest.raises(ValueError, match=r"class ids \[N\] or probabilities \[N, 2\] for rte"):
        write_leaderboard_file(path, [0.3, 0.7], get_processor("rte"))
    with pytest.raises(ValueError, match=r"one score per example, got shape \(2, 2\)"):
        write_leaderboard_file(path, [[0.3, 0.7], [1, 2]], get_processor("stsb"))
    assert os.listdir(tmp_path) == ["X.tsv"]


def write_complete_set(directory, rows=3):
    """Writes the eleven leaderboard files; `rows`: per file, or None for the official sizes."""
    os.makedirs(directory, exist_ok=True)
    for name, task in TASKS.items():
        count = OFFICIAL_TEST_SIZES[name] if rows is None else rows
        processor = get_processor(task)
        predictions = np.linspace(0, 5, count) if processor.is_regression else np.arange(count) % 2
        write_leaderboard_file(os.path.join(directory, f"{name}.tsv"), predictions, processor)


def test_complete_set_is_zipped(tmp_path):
    write_complete_set(tmp_path / "out")
    (tmp_path / "out" / "test_results.tsv").write_text("0.5\t0.5\n")
    target = str(tmp_path / "submission.zip")
    names = build_submission(str(tmp_path / "out"), target, expected_sizes=SMALL)
    assert names == list(OFFICIAL_TEST_SIZES)
    with zipfile.ZipFile(target) as archive:
        assert sorted(archive.namelist()) == sorted(f"{n}.tsv" for n in OFFICIAL_TEST_SIZES)
        assert archive.read("RTE.tsv") == (tmp_path / "out" / "RTE.tsv").read_bytes()
        assert archive.read("STS-B.tsv").decode().splitlines()[-1] == "2\t5.000"


def test_files_in_per_task_subdirectories(tmp_path):
    write_complete_set(tmp_path / "flat")
    for name in OFFICIAL_TEST_SIZES:
        os.makedirs(tmp_path / "runs" / name)
        os.rename(tmp_path / "flat" / f"{name}.tsv", tmp_path / "runs" / name / f"{name}.tsv")
    target = tmp_path / "s.zip"
    assert len(build_submission(str(tmp_path / "runs"), str(target), expected_sizes=SMALL)) == 11
    write_complete_set(tmp_path / "runs" / "again", rows=3)
    with pytest.raises(ValueError, match=r"CoLA.tsv is in several places"):
        build_submission(str(tmp_path / "runs"), str(target), expected_sizes=SMALL)


def test_missing_files_are_named_and_nothing_written(tmp_path):
    write_complete_set(tmp_path / "out")
    os.remove(tmp_path / "out" / "AX.tsv")
    os.remove(tmp_path / "out" / "MNLI-mm.tsv")
    target = tmp_path / "submission.zip"
    with pytest.raises(ValueError) as err:
        build_submission(str(tmp_path / "out"), str(target), expected_sizes=SMALL)
    assert "Missing 2 of 11 files" in str(err.value)
    assert "MNLI-mm.tsv, AX.tsv" in str(err.value)
    assert not target.exists()
    names = build_submission(str(tmp_path / "out"), str(target), True, expected_sizes=SMALL)
    assert "AX" not in names and len(names) == 9
    with zipfile.ZipFile(target) as archive:
        assert len(archive.namelist()) == 9


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("CoLA", "id\tlabel\n0\t1\n1\t0\n2\t1\n", "the first line must be the header"),
        ("SST-2", "index\tprediction\n0\t1\n1\t0\n", "2 predictions, but the SST-2 test set has 3"),
        ("RTE", "index\tprediction\n0\tentailment\n1\tcontradiction\n2\tentailment\n",
         "line 3: label 'contradiction' is not one of ['entailment', 'not_entailment']"),
        ("STS-B", "index\tprediction\n0\t1.000\n1\t5.100\n2\t0.000\n",
         "line 3: the score must be a number in [0, 5], found '5.100'"),
        ("MRPC", "index\tprediction\n0\t1\n2\t0\n1\t1\n", "line 3: expected '1<TAB><prediction>'"),
        ("AX", "", "found 'an empty file'"),
    ],
)  # fmt: skip
def test_malformed_files_are_refused(tmp_path, name, content, message):
    write_complete_set(tmp_path / "out")
    (tmp_path / "out" / f"{name}.tsv").write_text(content)
    target = tmp_path / "submission.zip"
    for partial in (False, True):
        with pytest.raises(ValueError) as err:
            build_submission(str(tmp_path / "out"), str(target), partial, expected_sizes=SMALL)
        assert f"{name}.tsv" in str(err.value) and message in str(err.value)
    assert not target.exists()


def test_official_sizes_are_the_default(tmp_path):
    write_complete_set(tmp_path / "out")
    with pytest.raises(ValueError, match="3 predictions, but the QQP test set has 390965"):
        build_submission(str(tmp_path / "out"), str(tmp_path / "s.zip"))


def test_sweep_folders_count_with_their_best_trial(tmp_path):
    # One sweep per task (run_sweep.py's layout): every trial wrote its leaderboard file;
    # only best/ counts, so the set is complete and unambiguous.
    write_complete_set(tmp_path / "flat")
    for name in OFFICIAL_TEST_SIZES:
        sweep = tmp_path / "sweeps" / name
        (sweep / "sweep_results.json").parent.mkdir(parents=True)
        (sweep / "sweep_results.json").write_text("{}")
        for folder in ("trials/lr=1/restart_0", "trials/lr=2/restart_0", "best"):
            os.makedirs(sweep / folder)
            shutil.copy(tmp_path / "flat" / f"{name}.tsv", sweep / folder / f"{name}.tsv")
    (tmp_path / "sweeps" / "MRPC" / "best" / "MRPC.tsv").write_text(
        "index\tprediction\n0\t1\n1\t1\n2\t1\n"
    )
    target = str(tmp_path / "submission.zip")
    names = build_submission(str(tmp_path / "sweeps"), target, expected_sizes=SMALL)
    assert names == list(OFFICIAL_TEST_SIZES)
    with zipfile.ZipFile(target) as archive:
        assert (
            archive.read("MRPC.tsv")
            == (tmp_path / "sweeps" / "MRPC" / "best" / "MRPC.tsv").read_bytes()
        )
    # Without the sweep marker the trials' copies are ambiguous, as before.
    os.remove(tmp_path / "sweeps" / "RTE" / "sweep_results.json")
    with pytest.raises(ValueError, match="RTE.tsv is in several places"):
        build_submission(str(tmp_path / "sweeps"), target, expected_sizes=SMALL)
