"""export_model.py's job: a trained checkpoint in, a SavedModel or TFLite export out.

Each export is a job module of its own under `jobs/export/`: the text-in SavedModel of each
task (`classifier.py`, `ner.py`, `squad.py`, `pretraining.py`), the TF Hub encoder and
preprocessor (`tfhub.py`) and the TFLite model of any of them (`lite.py`), on the weights and
folder they share (`weights.py`, `saved_model.py`). Here: the flags' settings, what is refused
before any work, and which export each --task and --format builds.
"""

import dataclasses

from absl import logging

from jobs.export import tfhub
from jobs.export.classifier import classifier_export
from jobs.export.lite import write_lite_export
from jobs.export.ner import ner_export
from jobs.export.pretraining import pretraining_export
from jobs.export.saved_model import refuse_existing, write_saved_model
from jobs.export.squad import squad_export
from jobs.export.weights import Weights, assigning, check_vocab
from training.settings import TASK_DEFAULTS


@dataclasses.dataclass
class ExportRun:
    """Settings of one export_model.py invocation: the flags of the same names."""

    task: str
    checkpoint: str
    vocab_file: str
    do_lower_case: bool
    export_dir: str
    max_seq_length: int | None = None
    overwrite: bool = False
    task_name: str | None = None
    preprocessor_export_dir: str | None = None
    label_file: str | None = None
    # None: the task's runner's default (training.settings.TASK_DEFAULTS).
    doc_stride: int | None = None
    max_query_length: int | None = None
    n_best_size: int | None = None
    max_answer_length: int | None = None
    version_2_with_negative: bool = False
    null_score_diff_threshold: float | None = None
    precision: str = "float32"
    pad_to_max_seq_length: bool = False
    # --task=classifier: inputs longer than max_seq_length as the run read them
    # (data.glue.long_inputs); doc_stride None there is half of each text's room.
    long_inputs: str = "truncate"
    head_tokens: int | None = None
    window_aggregation: str = "mean"
    # "saved_model" (text in) or "tflite" (ids in; serving.exports.tflite); int8 implies tflite.
    format: str = "saved_model"
    quantize: str = "none"

    def __post_init__(self):
        for name, value in TASK_DEFAULTS.get(self.task, {}).items():
            if getattr(self, name) is None:
                setattr(self, name, value)


def _check_before_work(run, bert_config):
    """Refuses what cannot work before any: building and saving a large model takes minutes."""
    for flag in ("export_dir", "preprocessor_export_dir"):
        refuse_existing(flag, getattr(run, flag), run.overwrite)
    check_vocab(run.vocab_file, bert_config.vocab_size)
    if run.format == "tflite" and run.task == "pretraining":
        raise ValueError(
            "--format=tflite exports the classifier, ner, squad and encoder tasks; "
            "--task=pretraining exports a SavedModel only: drop --format and --quantize."
        )
    if run.format == "tflite" and run.precision != "float32":
        raise ValueError(
            f"--format=tflite stores float32 or int8 weights (--quantize), not "
            f"--precision={run.precision}: drop --precision."
        )
    if run.precision != "float32" and run.task == "encoder":
        raise ValueError(
            f"--task=encoder exports float32 only (--precision={run.precision} given): a TF Hub "
            "encoder is fine-tuned by its users, who choose their own precision. Drop "
            "--precision."
        )


def export_model(run, bert_config):
    """Writes the export of `run.task` from the checkpoint `run.checkpoint`, atomically.

    Args:
        run: `ExportRun`.
        bert_config: the checkpoint's `BertConfig`.

    Returns:
        The export directory.

    Raises:
        FileExistsError: `export_dir` exists and `overwrite` is false.
        ValueError: the checkpoint does not hold the task's model (every mismatch listed).
    """
    _check_before_work(run, bert_config)
    return export_weights(run, bert_config, Weights.from_checkpoint(run.checkpoint))


def _encoder(run, bert_config, weights):
    root = tfhub.encoder_export(bert_config, weights, run.vocab_file, run.do_lower_case)
    return root, None


# What each --task builds: (the exported root object, its signatures).
_BUILDERS = {
    "classifier": classifier_export,
    "ner": ner_export,
    "squad": squad_export,
    "encoder": _encoder,
    "pretraining": pretraining_export,
}


def export_weights(run, bert_config, weights):
    """Writes the export `run` describes from weights already read (checked by the caller).

    Args:
        run: `ExportRun`.
        bert_config: the weights' `BertConfig`.
        weights: `jobs.export.weights.Weights`.

    Returns:
        The export directory.
    """
    with assigning(run.precision):
        _export(run, bert_config, weights)
    return run.export_dir


def _export(run, bert_config, weights):
    logging.info("Exporting --task=%s from %s", run.task, weights.source)
    if run.task not in _BUILDERS:
        raise ValueError(f"Unknown --task={run.task}.")
    if run.format == "tflite":
        write_lite_export(run, bert_config, weights)
        return
    root, signatures = _BUILDERS[run.task](run, bert_config, weights)
    if run.task == "encoder":
        tfhub.write_encoder(root, bert_config, run.export_dir, run.overwrite)
        if run.preprocessor_export_dir:
            tfhub.export_preprocessor(
                run.vocab_file,
                run.do_lower_case,
                run.max_seq_length,
                run.preprocessor_export_dir,
                run.overwrite,
            )
            logging.info("Wrote the matching preprocessor to %s", run.preprocessor_export_dir)
    else:
        write_saved_model(run.export_dir, run.overwrite, root, signatures)
