"""export_model.py --task=classifier: a fine-tuned classifier's text-in export, and the sentence
for a checkpoint whose head has another number of classes than the task or labels it was told
(what the head's outputs mean is `data.classification.head`'s).
"""

import os

from data.classification.head import classifier_head
from data.glue.processors import canonical_task_name
from data.label_file import LABELS_FILE
from data.own_data.labels import PROBLEM_FILE
from fileio.flags_file import recorded_flags
from jobs.export.weights import load
from modeling import tf1_checkpoint
from serving.exports.classifier import ClassifierExport
from training.tasks import ClassifierTask

# run_classifier's head: its first dimension is the number of classes
# (tf1_checkpoint.classifier_variable_map).
_CLASSIFIER_HEAD = ("output_weights", "output_bias")


def classifier_model(run, bert_config, weights):
    """The fine-tuned classifier, weights loaded, and the head that says what it predicts.

    Returns:
        (`BertClassifier`, `data.classification.head.ClassifierHead`).

    Raises:
        ValueError: no task or labels to say what the head predicts, or a checkpoint that does
            not hold such a classifier.
    """
    head = classifier_head(run.task_name, weights.folder, run.label_file)
    if head is None:
        named = f" ({run.task_name} is not a GLUE task)" if run.task_name else ""
        raise ValueError(
            f"--task=classifier needs the task the model was fine-tuned on{named}: pass "
            "--task_name of a GLUE task (e.g. MRPC), or --checkpoint in the output_dir of the "
            "run_classifier.py run, whose problem.json and labels.txt say what it predicts."
        )
    regression = head.problem_type == "regression"
    multi_label = head.problem_type == "multi_label"
    task = ClassifierTask(bert_config, len(head.labels), regression, multi_label=multi_label)
    task.build_model()
    variable_map = task.variable_map()
    load(run.task, variable_map, weights, class_count_advice(run, head, variable_map, weights))
    return task.model, head


def classifier_export(run, bert_config, weights):
    """The classifier's export and its signatures, weights loaded (a builder: `jobs.export`).

    Raises:
        ValueError: as `classifier_model`.
    """
    model, head = classifier_model(run, bert_config, weights)
    export = ClassifierExport(
        model,
        run.vocab_file,
        run.do_lower_case,
        run.max_seq_length,
        head.labels,
        head.problem_type == "regression",
        head.has_text_b,
        run.pad_to_max_seq_length,
        run.long_inputs,
        run.head_tokens,
        run.doc_stride,
        run.window_aggregation,
        thresholds=head.thresholds,
    )
    return export, export.signatures()


def class_count_advice(run, head, variable_map, weights):
    """The last sentence of the load's error for a fine-tuned classifier whose encoder fits but
    whose head has another number of outputs than `head`'s classes (a checkpoint of another
    task), else None.

    Args:
        run: the `jobs.export_run.ExportRun`.
        head: the `ClassifierHead` the export was told.
        variable_map: original name -> variable of the export's model.
        weights: the checkpoint's `jobs.export.weights.Weights` (its arrays and run folder).
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
