"""convert_checkpoint.py's job: read weights in one format, write them in another, labels kept.

The weights themselves are `modeling.formats.conversion`'s. What is here is what a fine-tuned
model needs beside its task head (`modeling.formats.task_heads`): the names of its classes.

* Into a Hugging Face folder (`id2label`): run_ner's `labels.txt` beside the checkpoint (or
  `--label_file`); the labels of run_classifier's `--task_name` (given, or as the run's
  `flags.txt` beside the checkpoint records it).
* From a fine-tuning run's output_dir, which holds no bert_config.json or vocab.txt: the ones its
  `flags.txt` names.
* Out of a Hugging Face folder: a token classifier's `id2label` becomes the `labels.txt` that
  run_ner and export_model.py read; a sequence classifier's is compared with `--task_name`'s.
"""

import dataclasses
import os

from absl import logging

from data.classification.head import HF_PROBLEM_TYPES, run_head
from data.glue.processors import canonical_task_name, get_processor
from data.label_file import LABELS_FILE, label_file_text
from data.ner.conll import is_iob_tag
from data.ner.labels import read_label_file
from fileio import reading
from fileio.flags_file import recorded_flags
from jobs.export.tfhub import export_encoder_weights
from modeling.formats import conversion, task_heads
from modeling.formats.hf_import import read_hf_config


@dataclasses.dataclass
class ConvertRun:
    """The settings of one conversion (convert_checkpoint.py's flags)."""

    input_checkpoint: str
    output_dir: str
    input_format: str = "tf1"
    output_format: str = "keras"
    bert_config_file: str | None = None
    do_lower_case: bool = True
    overwrite: bool = False
    task_name: str | None = None
    label_file: str | None = None


def _run_folder(run):
    """The folder of a run's checkpoint (where its labels.txt and flags.txt are), or None."""
    if run.input_format != "tf1":
        return None
    path = run.input_checkpoint
    return path if reading.is_dir(path) else os.path.dirname(path)


def _task_labels(task_name):
    processor = get_processor(task_name)
    return None if getattr(processor, "is_regression", False) else processor.get_labels()


def _fitting(labels, count, source, head):
    """`labels` if the head has one output per label (or they are None: a regression task)."""
    if labels is not None and len(labels) != count:
        raise ValueError(
            f"{source} names {len(labels)} classes {list(labels)}, but the checkpoint's "
            f"{head.name} head has {count} outputs: name the task or labels the model was "
            "fine-tuned with."
        )
    return labels


def labels_of_run(run, head, count):
    """The class names of `head` (`count` outputs) for the HF `id2label`, or None (HF's
    `LABEL_i`, logged)."""
    folder = _run_folder(run)
    if run.input_format == "hf" and not (run.task_name or run.label_file):
        return task_heads.hf_labels(read_hf_config(run.input_checkpoint), count)
    if head is task_heads.NER:
        path = run.label_file or (folder and os.path.join(folder, LABELS_FILE))
        if path and reading.is_file(path):
            return _fitting(read_label_file(path), count, path, head)
        missing = "no --label_file" if not path else f"no {path}"
    elif head is task_heads.CLASSIFIER:
        task_name = run.task_name or (folder and recorded_flags(folder).get("task_name"))
        if task_name and canonical_task_name(task_name):
            return _fitting(_task_labels(task_name), count, f"--task_name={task_name}", head)
        own = run_head(folder, run.label_file)
        if own is not None:
            if own.problem_type == "regression":
                return None
            return _fitting(own.labels, count, f"the labels.txt of {folder}", head)
        missing = "no --task_name, and no flags.txt recording one beside the checkpoint"
    else:
        return None
    logging.warning(
        "The %s head's classes are named LABEL_0, LABEL_1, ... in config.json: %s. Pass %s to "
        "name them.",
        head.name,
        missing,
        "--label_file" if head is task_heads.NER else "--task_name",
    )
    return None


def hf_problem_type(run, head):
    """The HF `problem_type` of a run_classifier head of the user's own task, or None."""
    if head is not task_heads.CLASSIFIER:
        return None
    own = run_head(_run_folder(run), run.label_file)
    return HF_PROBLEM_TYPES[own.problem_type] if own else None


def _files_for_runners(run, head, count):
    """Files a fine-tuned HF model's labels become for the runners: {name: text}."""
    labels = task_heads.hf_labels(read_hf_config(run.input_checkpoint), count)
    if head is task_heads.NER and labels is not None:
        if all(is_iob_tag(label) for label in labels):
            return {LABELS_FILE: label_file_text(labels)}
        logging.warning(
            "config.json's labels %s are not all IOB tags (O, B-TYPE, I-TYPE), so no %s is "
            "written: write one for run_ner.py and export_model.py --label_file.",
            labels,
            LABELS_FILE,
        )
    elif head is task_heads.CLASSIFIER and labels is not None:
        expected = _task_labels(run.task_name) if run.task_name else None
        if expected is not None and labels != list(expected):
            logging.warning(
                "config.json's classes %s are not --task_name=%s's %s in that order: the "
                "runners and export_model.py would name class i by the task's list.",
                labels,
                run.task_name,
                list(expected),
            )
        else:
            logging.info("config.json's classes, by class id: %s", labels)
    return {}


def convert(run):
    """Reads `run.input_checkpoint` and writes `run.output_dir`; returns the files written."""
    # Refused before reading: converting a large model takes a while.
    conversion.check_output_dir(run.output_dir, run.overwrite)
    folder = _run_folder(run)
    recorded = recorded_flags(folder) if folder else {}
    bert_config_file = run.bert_config_file
    if folder and not bert_config_file and not reading.is_file(f"{folder}/bert_config.json"):
        # A fine-tuning run's output_dir has no bert_config.json; its flags.txt names the one.
        bert_config_file = recorded.get("bert_config_file")
        if bert_config_file:
            logging.info("--bert_config_file=%s from %s/flags.txt", bert_config_file, folder)
    config, arrays, vocab = conversion.read_weights(
        run.input_checkpoint, run.input_format, bert_config_file
    )
    if vocab is None and reading.is_file(recorded.get("vocab_file") or ""):
        vocab = recorded["vocab_file"]
    head = task_heads.head_in(arrays)
    heads = sorted({n.split("/")[1] for n in arrays if n.startswith("cls/")} - {"ner", "squad"})
    logging.info(
        "Read %d tensors (pretraining heads: %s; task head: %s) from %s",
        len(arrays),
        ", ".join(heads) or "none",
        head.name if head else "none",
        run.input_checkpoint,
    )
    if run.output_format == "tfhub":
        export_encoder_weights(
            config,
            task_heads.without(arrays, "tfhub"),
            vocab,
            run.do_lower_case,
            run.output_dir,
            run.overwrite,
        )
        return [run.output_dir]
    labels, extra_files, problem_type = None, {}, None
    count = task_heads.num_labels(head, arrays) if head is not None else 0
    if head is not None and run.output_format == "hf":
        labels = labels_of_run(run, head, count)
        problem_type = hf_problem_type(run, head)
    elif head is not None and run.input_format == "hf" and run.output_format == "tf1":
        extra_files = _files_for_runners(run, head, count)
    return conversion.write_weights(
        run.output_dir,
        run.output_format,
        config,
        arrays,
        vocab,
        do_lower_case=run.do_lower_case,
        overwrite=run.overwrite,
        labels=labels,
        extra_files=extra_files,
        problem_type=problem_type,
    )
