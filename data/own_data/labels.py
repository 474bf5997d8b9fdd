"""The class names of a classifier trained on a user's data: their order, `labels.txt`, and
`problem.json` (what the outputs are: single-label, multi-label or regression; pairs or not).

Class ids are positions in the label list. A list given by the user (`--labels` or
`--label_file`) keeps its order. A list found in the training file is sorted, so the same data
always gives the same ids: by number when every label is a number ("1" < "2" < "10"), else by
text. The run writes the list as `labels.txt` beside its checkpoints, one label per line; its
evaluation, prediction, export, serving and conversion read it back.
"""

import json
import os

from fileio import reading
from fileio.atomic import write_atomically

PROBLEM_FILE = "problem.json"


def _as_number(label):
    try:
        return float(label)
    except ValueError:
        return None


def sorted_labels(found):
    """The documented order of labels found in data: numeric if all are numbers, else text."""
    found = set(found)
    numbers = {label: _as_number(label) for label in found}
    if found and all(n is not None for n in numbers.values()):
        return sorted(found, key=lambda label: (numbers[label], label))
    return sorted(found)


def parse_label_list(text, flag="--labels"):
    """The labels of a comma-separated flag value, in its order.

    Raises:
        ValueError: an empty or repeated label, naming the flag.
    """
    labels = [label.strip() for label in text.split(",")]
    return check_label_list(labels, flag)


def check_label_list(labels, source):
    """`labels` if none is empty or repeated, else one sentence naming `source`."""
    seen = set()
    for label in labels:
        if not label:
            raise ValueError(f"{source} lists an empty label; give each class a name.")
        if label in seen:
            raise ValueError(f"{source} lists the label {label!r} twice; list each class once.")
        seen.add(label)
    if not labels:
        raise ValueError(f"{source} lists no label.")
    return list(labels)


def read_labels_file(path):
    """The labels of a `labels.txt` (one per line, blank lines skipped), in order.

    Raises:
        ValueError: a missing file, or an empty or repeated label, naming the file and line.
    """
    if not reading.is_file(path):
        raise ValueError(f"Label file not found: {path}. It lists one class name per line.")
    with reading.open_for_reading(path) as f:
        lines = f.read().splitlines()
    labels, seen = [], {}
    for number, line in enumerate(lines, start=1):
        label = line.strip().lstrip("\ufeff")
        if not label:
            continue
        if label in seen:
            raise ValueError(
                f"{path}, line {number}: {label!r} is listed twice (first on line "
                f"{seen[label]}); list each class once."
            )
        seen[label] = number
        labels.append(label)
    if not labels:
        raise ValueError(f"{path} lists no label; it needs one class name per line.")
    return labels


def earlier_run_folders(output_dir, init_checkpoint):
    """The folders whose labels.txt, problem.json and thresholds.txt a run that does not train
    (or evaluate) reads, in order: its --output_dir, then its --init_checkpoint's folder."""
    folders = [output_dir] if output_dir else []
    if init_checkpoint:
        folders.append(
            init_checkpoint if reading.is_dir(init_checkpoint) else os.path.dirname(init_checkpoint)
        )
    return folders


def write_problem_file(path, problem_type, has_text_b):
    """Writes `problem.json`: `{"problem_type": ..., "has_text_b": ...}`, atomically."""
    text = json.dumps({"problem_type": problem_type, "has_text_b": bool(has_text_b)}, indent=1)
    write_atomically(path, text + "\n")


def read_problem_file(path):
    """`(problem_type, has_text_b)` of a `problem.json`.

    Raises:
        ValueError: a file that is not one, naming it.
    """
    with reading.open_for_reading(path) as f:
        text = f.read()
    try:
        value = json.loads(text)
        problem_type, has_text_b = value["problem_type"], bool(value["has_text_b"])
    except (ValueError, KeyError, TypeError):
        raise ValueError(
            f'{path} is not a run\'s problem.json ({{"problem_type": ..., "has_text_b": ...}}); '
            "run_classifier.py writes it beside its checkpoints."
        ) from None
    if problem_type not in ("single_label", "multi_label", "regression"):
        raise ValueError(f"{path}: unknown problem_type {problem_type!r}.")
    return problem_type, has_text_b
