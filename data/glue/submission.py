"""Prediction files: the original's test_results.tsv and the GLUE leaderboard files and zip.

`write_test_results` writes class probabilities exactly as the original run_classifier.py.
`write_leaderboard_file` writes one task's file in the GLUE site's format (header
`index\tprediction`, label strings, STS-B clipped to [0, 5]). `build_submission` (the command
build_glue_submission.py) collects the eleven leaderboard files, checks every one against the
official test set (header, row count, indices, labels) and writes the zip; an incomplete or
malformed set is refused with a message naming every problem.
"""

import io
import os
import zipfile

import numpy as np

from data.glue.processors import get_processor
from fileio.atomic import write_atomically
from fileio.reading import is_dir, is_file, open_for_reading, walk

# Rows of each official GLUE test set, from the `num_examples` of the test splits in
# huggingface/datasets' datasets/glue/dataset_infos.json (TFDS shows the same in its catalog).
OFFICIAL_TEST_SIZES = {
    "CoLA": 1063,
    "SST-2": 1821,
    "MRPC": 1725,
    "STS-B": 1379,
    "QQP": 390965,
    "MNLI-m": 9796,
    "MNLI-mm": 9847,
    "QNLI": 5463,
    "RTE": 3000,
    "WNLI": 146,
    "AX": 1104,
}

# Leaderboard file -> the task that predicts it.
LEADERBOARD_TASKS = {
    "CoLA": "cola",
    "SST-2": "sst2",
    "MRPC": "mrpc",
    "STS-B": "stsb",
    "QQP": "qqp",
    "MNLI-m": "mnli",
    "MNLI-mm": "mnli",
    "QNLI": "qnli",
    "RTE": "rte",
    "WNLI": "wnli",
    "AX": "ax",
}

HEADER = "index\tprediction"
STSB_RANGE = (0.0, 5.0)


def write_test_results(path, probabilities):
    """Writes test_results.tsv exactly as the original: per example, its class probabilities
    in label order as `str(float32)`, tab-separated, newline-terminated; no header, no index.

    Args:
        path: output file.
        probabilities: float array [N, num_labels] (or [N] for one output), real examples only.
    """
    rows = np.asarray(probabilities, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[:, None]
    write_atomically(path, "".join("\t".join(str(p) for p in row) + "\n" for row in rows))


def format_predictions(predictions, processor):
    """Returns the leaderboard strings of predictions for a task.

    Args:
        predictions: class ids [N] or class probabilities [N, num_labels] (the argmax is taken);
            for regression, predicted scores [N] or [N, 1].
        processor: the task's `DataProcessor`.

    Raises:
        ValueError: if the predictions are not class ids (or scores) of the task.
    """
    values = np.asarray(predictions)
    if processor.is_regression:
        if values.ndim > 2 or (values.ndim == 2 and values.shape[1] != 1):
            raise ValueError(f"Expected one score per example, got shape {values.shape}.")
        scores = np.clip(values.astype(np.float64).reshape(-1), *STSB_RANGE)
        return [f"{score:.3f}" for score in scores]
    labels = processor.leaderboard_labels()
    if values.ndim == 2 and values.shape[1] == len(labels):
        values = values.argmax(axis=-1)
    if values.ndim != 1 or (values.size and not np.all(np.mod(values, 1) == 0)):
        raise ValueError(
            f"Expected class ids [N] or probabilities [N, {len(labels)}] for {processor.name}, "
            f"got an array of shape {values.shape}."
        )
    ids = values.astype(np.int64)
    bad = sorted({int(i) for i in ids if not 0 <= i < len(labels)})
    if bad:
        raise ValueError(
            f"Predicted class ids {bad[:5]} are not classes of {processor.name} "
            f"(0..{len(labels) - 1})."
        )
    return [labels[i] for i in ids]


def write_leaderboard_file(path, predictions, processor):
    """Writes a GLUE leaderboard file: `index\tprediction`, then one row per test example in
    order, indices 0..N-1, label strings (STS-B: scores clipped to [0, 5], 3 decimals).

    Args:
        path: output file, e.g. `<output_dir>/CoLA.tsv`.
        predictions: class ids [N], probabilities [N, num_labels] or scores [N], in test-set
            order.
        processor: the task's `DataProcessor`.
    """
    values = format_predictions(predictions, processor)
    lines = [HEADER] + [f"{i}\t{value}" for i, value in enumerate(values)]
    write_atomically(path, "\n".join(lines) + "\n")


def check_leaderboard_file(path, name, expected_rows):
    """Returns the problems of one leaderboard file (an empty list when it is valid)."""
    task = get_processor(LEADERBOARD_TASKS[name])
    with open_for_reading(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0] != HEADER:
        found = lines[0] if lines else "an empty file"
        return [f"{path}: the first line must be the header {HEADER!r}, found {found!r}."]
    rows = lines[1:]
    problems = []
    if len(rows) != expected_rows:
        problems.append(
            f"{path}: {len(rows)} predictions, but the {name} test set has {expected_rows}."
        )
    allowed = set(task.leaderboard_labels())
    for number, line in enumerate(rows, start=2):
        fields = line.split("\t")
        problem = None
        if len(fields) != 2 or fields[0] != str(number - 2):
            problem = f"expected '{number - 2}<TAB><prediction>', found {line!r}"
        elif task.is_regression:
            try:
                value = float(fields[1])
            except ValueError:
                value = float("nan")
            if not STSB_RANGE[0] <= value <= STSB_RANGE[1]:
                problem = f"the score must be a number in [0, 5], found {fields[1]!r}"
        elif fields[1] not in allowed:
            problem = f"label {fields[1]!r} is not one of {sorted(allowed)}"
        if problem:
            problems.append(f"{path}, line {number}: {problem}.")
            break
    return problems


def find_leaderboard_files(input_dir):
    """Maps each leaderboard name to its file in `input_dir` or, if absent there, the one copy
    in its subdirectories.

    A run_sweep.py folder (one holding sweep_results.json) counts with its best trial's files
    only (its `best/`), not those of every trial under its `trials/`.

    Returns:
        (found: dict name -> path, problems: list of str for names found more than once).
    """
    found, problems = {}, []
    listing = list(walk(input_dir))
    trials = tuple(
        os.path.join(root, "trials") + os.sep
        for root, _, files in listing
        if "sweep_results.json" in files
    )
    listing = [entry for entry in listing if not (entry[0] + os.sep).startswith(trials)]
    for name in OFFICIAL_TEST_SIZES:
        top = os.path.join(input_dir, f"{name}.tsv")
        if is_file(top):
            found[name] = top
            continue
        matches = sorted(
            os.path.join(root, f"{name}.tsv")
            for root, _, files in listing
            if f"{name}.tsv" in files
        )
        if len(matches) == 1:
            found[name] = matches[0]
        elif matches:
            problems.append(f"{name}.tsv is in several places: {', '.join(matches)}; keep one.")
    return found, problems


def build_submission(input_dir, output_file, allow_partial=False, expected_sizes=None):
    """Checks the leaderboard files of `input_dir` and zips them (flat, `<name>.tsv`).

    Args:
        input_dir: directory holding the `.tsv` files (directly or in subdirectories).
        output_file: the zip to write; written only if every check passes.
        allow_partial: zip the files present instead of refusing a set with files missing.
        expected_sizes: rows per leaderboard name (default `OFFICIAL_TEST_SIZES`).

    Returns:
        The names zipped, in leaderboard order.

    Raises:
        ValueError: listing every missing or malformed file.
    """
    expected_sizes = OFFICIAL_TEST_SIZES if expected_sizes is None else expected_sizes
    if not is_dir(input_dir):
        raise ValueError(f"--input_dir {input_dir} is not a directory.")
    found, problems = find_leaderboard_files(input_dir)
    missing = [f"{name}.tsv" for name in OFFICIAL_TEST_SIZES if name not in found]
    if missing and not allow_partial:
        problems.insert(
            0,
            f"Missing {len(missing)} of {len(OFFICIAL_TEST_SIZES)} files in {input_dir}: "
            f"{', '.join(missing)} (pass --allow_partial to zip the others).",
        )
    for name, path in found.items():
        problems.extend(check_leaderboard_file(path, name, expected_sizes[name]))
    if not found and not problems:
        problems.append(f"No leaderboard files in {input_dir}.")
    if problems:
        raise ValueError("Submission refused:\n  " + "\n  ".join(problems))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, path in found.items():
            archive.write(path, f"{name}.tsv")
    write_atomically(output_file, buffer.getvalue())
    return list(found)
