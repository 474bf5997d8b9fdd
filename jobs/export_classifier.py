"""export_model.py --task=classifier: what the fine-tuned head's outputs mean (a GLUE task's,
or a run_classifier run's own labels, problem type and thresholds), and the sentence for a
checkpoint whose head has another number of classes.
"""

import dataclasses
import os

import tensorflow as tf
from absl import logging

from data.classification.thresholds import read_thresholds_file
from data.glue.processors import canonical_task_name, get_processor
from data.own_data.labels import (
    LABELS_FILE,
    PROBLEM_FILE,
    THRESHOLDS_FILE,
    read_labels_file,
    read_problem_file,
)
from modeling import tf1_checkpoint
from training.settings import recorded_flags

# run_classifier's head: its first dimension is the number of classes
# (tf1_checkpoint.classifier_variable_map).
_CLASSIFIER_HEAD = ("output_weights", "output_bias")


@dataclasses.dataclass
class ClassifierHead:
    """What a fine-tuned classifier's outputs mean (`serving.classifier.ClassifierExport`).

    Attributes:
        labels: class names in class-id order (`["score"]` for regression).
        problem_type: "single_label", "multi_label" or "regression".
        has_text_b: the model takes sentence pairs.
        thresholds: multi-label: each label's decision threshold; else None.
    """

    labels: list
    problem_type: str
    has_text_b: bool
    thresholds: list | None = None


def classifier_head(run, folder):
    """The `ClassifierHead` of --task_name (a GLUE task) or of the run in `folder`
    (run_classifier's `problem.json`, `labels.txt` or --label_file, `thresholds.txt`).

    Raises:
        ValueError: neither a GLUE --task_name nor a run's problem.json, naming what to pass.
    """
    if run.task_name and canonical_task_name(run.task_name):
        processor = get_processor(run.task_name)
        problem = "regression" if processor.is_regression else "single_label"
        return ClassifierHead(list(processor.get_labels()), problem, processor.has_text_b)
    problem_path = folder and os.path.join(folder, PROBLEM_FILE)
    if not problem_path or not tf.io.gfile.exists(problem_path):
        named = f" ({run.task_name} is not a GLUE task)" if run.task_name else ""
        raise ValueError(
            f"--task=classifier needs the task the model was fine-tuned on{named}: pass "
            "--task_name of a GLUE task (e.g. MRPC), or --checkpoint in the output_dir of the "
            "run_classifier.py run, whose problem.json and labels.txt say what it predicts."
        )
    problem, has_text_b = read_problem_file(problem_path)
    if problem == "regression":
        return ClassifierHead(["score"], problem, has_text_b)
    labels = read_labels_file(run.label_file or os.path.join(folder, LABELS_FILE))
    thresholds = None
    if problem == "multi_label":
        path = os.path.join(folder, THRESHOLDS_FILE)
        if tf.io.gfile.exists(path):
            thresholds = [float(t) for t in read_thresholds_file(path, labels)]
        else:
            logging.warning(
                "No %s beside the checkpoint: the export predicts labels at probability 0.5. "
                "Run run_classifier.py --do_eval to choose thresholds on the dev set.",
                path,
            )
            thresholds = [0.5] * len(labels)
    return ClassifierHead(labels, problem, has_text_b, thresholds)


def class_count_advice(run, head, variable_map, weights):
    """The last sentence of the load's error for a fine-tuned classifier whose encoder fits but
    whose head has another number of outputs than `head`'s classes (a checkpoint of another
    task), else None.

    Args:
        run: the `jobs.export_run.ExportRun`.
        head: the `ClassifierHead` the export was told.
        variable_map: original name -> variable of the export's model.
        weights: the checkpoint's arrays by original name (`arrays`) and its run's `folder`.
    """
    trained = weights.arrays.get(_CLASSIFIER_HEAD[0])
    encoder = {k: v for k, v in variable_map.items() if k not in _CLASSIFIER_HEAD}
    if trained is None or tf1_checkpoint.array_mismatches(encoder, weights.arrays):
        return None
    count = int(trained.shape[0])
    if count == len(head.labels):
        return None
    has = f"has {count} output{'s' if count != 1 else ''}"
    wanted = (
        "1 output (a regression score)"
        if head.problem_type == "regression"
        else f"{len(head.labels)} classes"
    )
    if run.task_name and canonical_task_name(run.task_name):
        recorded = weights.folder and recorded_flags(weights.folder).get("task_name")
        if recorded and canonical_task_name(recorded) != canonical_task_name(run.task_name):
            fix = f"pass --task_name={recorded} (the task its flags.txt names)"
        else:
            fix = "pass the --task_name the model was fine-tuned on"
        return (
            f"The checkpoint's classifier head {has} but --task_name={run.task_name} has "
            f"{wanted}, so --task_name is not the task the model was fine-tuned on: {fix}, or "
            f"--checkpoint of a model fine-tuned on {run.task_name}."
        )
    if head.problem_type == "regression":
        # problem.json, not a label list, makes the head a regression.
        return (
            f"The checkpoint's classifier head {has} but "
            f"{os.path.join(weights.folder, PROBLEM_FILE)} says regression ({wanted}): pass "
            "--checkpoint in the output_dir of the run that wrote this checkpoint."
        )
    labels = run.label_file or os.path.join(weights.folder, LABELS_FILE)
    return (
        f"The checkpoint's classifier head {has} but {labels} gives {wanted}, so they are not "
        "the labels the model was fine-tuned on: pass --label_file with the labels.txt of the "
        "run that wrote the checkpoint."
    )
