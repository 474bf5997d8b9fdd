"""What a fine-tuned classifier's outputs mean: its labels, its problem type, whether it reads
pairs, and a multi-label model's decision thresholds.

One home for the question "what does this checkpoint predict?", asked by export_model.py (the
SavedModel and TFLite answers), serve.py (through the export) and convert_checkpoint.py
(`id2label`, `problem_type`). A GLUE task answers it by its name; a run of the user's own
answers it by the files run_classifier.py writes beside its checkpoints (`problem.json`,
`labels.txt`, `thresholds.txt`, `data.own_data.labels`). TensorFlow-free.
"""

import dataclasses
import os

from absl import logging

from data.classification.thresholds import THRESHOLDS_FILE, read_thresholds_file
from data.glue.processors import canonical_task_name, get_processor
from data.label_file import LABELS_FILE
from data.own_data.labels import PROBLEM_FILE, read_labels_file, read_problem_file
from fileio import reading

# run_classifier's problem types as Hugging Face's config.json names them.
HF_PROBLEM_TYPES = {
    "single_label": "single_label_classification",
    "multi_label": "multi_label_classification",
    "regression": "regression",
}


@dataclasses.dataclass
class ClassifierHead:
    """What a fine-tuned classifier's outputs mean.

    Attributes:
        labels: class names in class-id order (`["score"]` for regression).
        problem_type: "single_label", "multi_label" or "regression".
        has_text_b: the model takes sentence pairs.
        thresholds: multi-label: each label's decision threshold `[C]`; else None.
    """

    labels: list
    problem_type: str
    has_text_b: bool
    thresholds: list | None = None


def glue_head(task_name):
    """The head of a GLUE or XNLI task by name, or None for any other name."""
    if not task_name or canonical_task_name(task_name) is None:
        return None
    processor = get_processor(task_name)
    problem = "regression" if processor.is_regression else "single_label"
    return ClassifierHead(list(processor.get_labels()), problem, processor.has_text_b)


def run_head(folder, label_file=None):
    """The head of the run_classifier run whose files are in `folder`, or None where there is
    no `problem.json` (not such a run).

    Args:
        folder: the run's output_dir (the checkpoint's folder), or None.
        label_file: a labels file to use instead of the run's `labels.txt`.
    """
    path = folder and os.path.join(folder, PROBLEM_FILE)
    if not path or not reading.is_file(path):
        return None
    problem, has_text_b = read_problem_file(path)
    if problem == "regression":
        return ClassifierHead(["score"], problem, has_text_b)
    labels = read_labels_file(label_file or os.path.join(folder, LABELS_FILE))
    thresholds = None
    if problem == "multi_label":
        path = os.path.join(folder, THRESHOLDS_FILE)
        if reading.is_file(path):
            thresholds = [float(t) for t in read_thresholds_file(path, labels)]
        else:
            logging.warning(
                "No %s beside the checkpoint: labels are predicted at probability 0.5. Run "
                "run_classifier.py --do_eval to choose thresholds on the dev set.",
                path,
            )
            thresholds = [0.5] * len(labels)
    return ClassifierHead(labels, problem, has_text_b, thresholds)


def classifier_head(task_name, folder, label_file=None):
    """The head of `task_name` when it is a GLUE task, else of the run in `folder`; None when
    neither says."""
    return glue_head(task_name) or run_head(folder, label_file)
