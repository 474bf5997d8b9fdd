"""export_model.py's job: a trained checkpoint in, a SavedModel out (see serving/)."""

import dataclasses
import os

import tensorflow as tf
from absl import logging

from data.classification.head import classifier_head
from data.ner.labels import LABELS_FILE, read_label_file
from data.squad import evaluation
from data.tokenization.full_tokenizer import load_vocab
from fileio.atomic import atomic_directory
from jobs.export_classifier import class_count_advice
from modeling import tf1_checkpoint
from modeling.formats.conversion import SAVED_MODEL_CONFIG
from modeling.layers import weights_from_checkpoint
from serving.exports.classifier import ClassifierExport
from serving.exports.ner import NerExport
from serving.exports.pretraining import PretrainingExport
from serving.exports.squad import SquadExport
from serving.exports.tfhub import build_encoder, build_preprocessor
from serving.exports.tflite import lite_settings, write_tflite_export
from training.precision import compute_policy
from training.settings import TASK_DEFAULTS
from training.tasks import ClassifierTask, NerTask, PretrainingTask, SquadTask

# Which runner writes checkpoints that each export reads, for error messages.
_TRAINED_BY = {
    "classifier": "run_classifier.py (an output_dir of a fine-tuning run)",
    "encoder": "Google's bert_model.ckpt, run_pretraining.py or any fine-tuning run",
    "pretraining": "Google's bert_model.ckpt or run_pretraining.py",
    "ner": "run_ner.py (an output_dir of a fine-tuning run)",
    "squad": "run_squad.py (an output_dir of a fine-tuning run)",
}


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


def _check_vocab(vocab_file, vocab_size):
    # A token id past the embedding table reads garbage on accelerators instead of failing.
    tokens = len(load_vocab(vocab_file))
    if tokens > vocab_size:
        raise ValueError(
            f"--vocab_file {vocab_file} has {tokens} tokens but the model's vocab_size is "
            f"{vocab_size} (--bert_config_file): pass the vocab.txt the model was trained with."
        )


def _load(task, variable_map, weights, advice=None):
    """Assigns every variable of the export from the weights, or says what does not fit.

    Args:
        task: the --task exported.
        variable_map: original name -> variable of the export's model.
        weights: `_Weights`.
        advice: the error's last sentence, where the caller knows better than the default
            (which blames --bert_config_file and names the runner that writes such checkpoints).
    """
    problems = tf1_checkpoint.array_mismatches(variable_map, weights.arrays)
    if problems:
        advice = advice or (
            f"{tf1_checkpoint.CONFIG_ADVICE}\n--task={task} reads a checkpoint written by "
            f"{_TRAINED_BY[task]}; pass --checkpoint of such a run (and its --bert_config_file "
            "and --task_name)."
        )
        raise tf1_checkpoint.mismatch_error(weights.source, problems, advice)
    tf1_checkpoint.assign_arrays(variable_map, weights.arrays, weights.source)


def _classifier(run, bert_config, weights):
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
    _load(run.task, variable_map, weights, class_count_advice(run, head, variable_map, weights))
    export = ClassifierExport(
        task.model,
        run.vocab_file,
        run.do_lower_case,
        run.max_seq_length,
        head.labels,
        regression,
        head.has_text_b,
        run.pad_to_max_seq_length,
        run.long_inputs,
        run.head_tokens,
        run.doc_stride,
        run.window_aggregation,
        thresholds=head.thresholds,
    )
    # What the TFLite export records in serving.json (serving.exports.tflite.lite_settings).
    export.head = head
    return export, export.signatures()


def _ner(run, bert_config, weights):
    # labels.txt sits in the output_dir of the run_ner run the checkpoint comes from.
    label_file = run.label_file or os.path.join(weights.folder, LABELS_FILE)
    if not tf.io.gfile.exists(label_file):
        raise ValueError(
            f"No tag list at {label_file}: pass --label_file (the labels.txt of the run_ner "
            "run that wrote the checkpoint)."
        )
    labels = read_label_file(label_file)
    task = NerTask(bert_config, len(labels))
    task.build_model()
    _load(run.task, task.variable_map(), weights)
    export = NerExport(
        task.model, run.vocab_file, run.do_lower_case, run.max_seq_length, run.doc_stride, labels
    )
    return export, export.signatures()


def _null_threshold(run, weights):
    if run.null_score_diff_threshold is not None:
        return run.null_score_diff_threshold
    path = os.path.join(weights.folder, evaluation.THRESHOLD_FILE)
    if not tf.io.gfile.exists(path):
        raise ValueError(
            f"A SQuAD 2.0 export needs its null threshold, and {path} does not exist: run "
            "run_squad.py --do_eval --version_2_with_negative on the dev set with the same "
            "--output_dir (it writes the best threshold there), or pass "
            "--null_score_diff_threshold."
        )
    with tf.io.gfile.GFile(path) as f:
        return float(f.read())


def _squad(run, bert_config, weights):
    threshold = _null_threshold(run, weights) if run.version_2_with_negative else 0.0
    task = SquadTask(bert_config)
    task.build_model()
    _load(run.task, task.variable_map(), weights)
    logging.info("SQuAD export: null threshold %r", threshold)
    export = SquadExport(
        task.model,
        run.vocab_file,
        run.do_lower_case,
        run.max_seq_length,
        run.doc_stride,
        run.max_query_length,
        run.n_best_size,
        run.max_answer_length,
        run.version_2_with_negative,
        threshold,
    )
    return export, export.signatures()


def _encoder(run, bert_config, weights):
    # The `mlm` sub-object comes with the checkpoint's masked-LM head, when it has one (Google's
    # bert_model.ckpt and run_pretraining's checkpoints do; fine-tuned ones do not).
    with_mlm = "cls/predictions/output_bias" in weights.arrays
    task = PretrainingTask(bert_config)
    model = task.build_model()
    if with_mlm:
        names = tf1_checkpoint.build_variable_map(
            bert_model=model.bert, pretraining_heads=model.cls
        )
        names = {k: v for k, v in names.items() if not k.startswith("cls/seq_relationship")}
    else:
        names = tf1_checkpoint.build_variable_map(bert_model=model.bert)
    _load(run.task, names, weights)
    logging.info("TF Hub encoder %s the mlm sub-object.", "with" if with_mlm else "without")
    heads = model.cls if with_mlm else None
    return build_encoder(model.bert, run.vocab_file, run.do_lower_case, heads), None


def _pretraining(run, bert_config, weights):
    task = PretrainingTask(bert_config)
    task.build_model()
    _load(run.task, task.variable_map(), weights)
    export = PretrainingExport(task.model, run.vocab_file, run.do_lower_case)
    return export, export.signatures()


@dataclasses.dataclass
class _Weights:
    """The weights an export reads: arrays by original name, what messages call them, and the
    folder of the run that wrote them (its labels.txt and SQuAD threshold; None in memory)."""

    arrays: dict
    source: str
    folder: str | None


def _check_before_work(run, bert_config):
    """Refuses what cannot work before any: building and saving a large model takes minutes."""
    for flag in ("export_dir", "preprocessor_export_dir"):
        path = getattr(run, flag)
        if path and tf.io.gfile.exists(path) and not run.overwrite:
            raise FileExistsError(
                f"--{flag} {path} already exists; pass --overwrite to replace it or choose "
                "another directory."
            )
    _check_vocab(run.vocab_file, bert_config.vocab_size)
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
    """Writes the SavedModel of `run.task` from the checkpoint `run.checkpoint`, atomically.

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
    prefix = tf1_checkpoint.resolve_checkpoint_path(run.checkpoint)
    weights = _Weights(tf1_checkpoint.read_checkpoint(prefix), prefix, os.path.dirname(prefix))
    return _export_weights(run, bert_config, weights)


def _export_weights(run, bert_config, weights):
    # The flag's policy, not whatever a training run in this process left behind; weights
    # stay float32 under every policy. Each task's load is strict, so no variable needs its
    # random draw.
    with compute_policy(run.precision), weights_from_checkpoint():
        _export(run, bert_config, weights)
    return run.export_dir


# What each --task builds: (the exported root object, its signatures).
_BUILDERS = {
    "classifier": _classifier,
    "ner": _ner,
    "squad": _squad,
    "encoder": _encoder,
    "pretraining": _pretraining,
}


def _export_tflite(run, bert_config, root):
    model = root.encoder if run.task == "encoder" else root.model
    with atomic_directory(run.export_dir, overwrite=run.overwrite) as temp:
        tf.io.gfile.makedirs(temp)
        write_tflite_export(
            temp,
            run.task,
            model,
            run.quantize,
            run.vocab_file,
            run.do_lower_case,
            bert_config,
            lite_settings(run, root),
        )
    logging.info("Wrote %s", run.export_dir)


def _export(run, bert_config, weights):
    logging.info("Exporting --task=%s from %s", run.task, weights.source)
    if run.task not in _BUILDERS:
        raise ValueError(f"Unknown --task={run.task}.")
    root, signatures = _BUILDERS[run.task](run, bert_config, weights)
    if run.format == "tflite":
        _export_tflite(run, bert_config, root)
        return
    parent = os.path.dirname(run.export_dir.rstrip("/"))
    if parent:
        tf.io.gfile.makedirs(parent)
    with atomic_directory(run.export_dir, overwrite=run.overwrite) as temp:
        tf.saved_model.save(root, temp, signatures=signatures)
        if run.task == "encoder":
            # TF Hub encoders carry no config; this copy lets convert_checkpoint.py read it back.
            tf.io.gfile.makedirs(os.path.join(temp, os.path.dirname(SAVED_MODEL_CONFIG)))
            bert_config.to_json_file(os.path.join(temp, SAVED_MODEL_CONFIG))
    logging.info("Wrote %s", run.export_dir)
    if run.task == "encoder" and run.preprocessor_export_dir:
        export_preprocessor(
            run.vocab_file,
            run.do_lower_case,
            run.max_seq_length,
            run.preprocessor_export_dir,
            run.overwrite,
        )
        logging.info("Wrote the matching preprocessor to %s", run.preprocessor_export_dir)


def export_preprocessor(vocab_file, do_lower_case, max_seq_length, export_dir, overwrite):
    """Writes the TF Hub preprocessor SavedModel (see `serving.exports.tfhub.build_preprocessor`)."""
    root = build_preprocessor(vocab_file, do_lower_case, max_seq_length)
    with atomic_directory(export_dir, overwrite=overwrite) as temp:
        tf.saved_model.save(root, temp)
    return export_dir


def export_encoder_weights(
    bert_config, arrays, vocab_file, do_lower_case, export_dir, overwrite=False
):
    """Writes weights held in memory (original names) as the TF Hub encoder of `--task=encoder`.

    The same export as export_model.py's, so both tools write one format
    (convert_checkpoint.py --output_format=tfhub uses this).

    Args:
        bert_config: `BertConfig` of the weights.
        arrays: dict original name -> np.ndarray (encoder, optionally the pretraining heads).
        vocab_file: the model's vocab.txt (a TF Hub encoder ships it as an asset).
        do_lower_case: recorded in the SavedModel for its users' preprocessing.
        export_dir: the SavedModel directory to create.
        overwrite: replace an existing `export_dir`.

    Returns:
        `export_dir`.
    """
    if not vocab_file:
        raise ValueError(
            "A TF Hub encoder ships its vocab.txt: none was found beside the input. Put the "
            "model's vocab.txt there."
        )
    run = ExportRun(
        task="encoder",
        checkpoint="",
        vocab_file=vocab_file,
        do_lower_case=do_lower_case,
        export_dir=export_dir,
        overwrite=overwrite,
    )
    _check_before_work(run, bert_config)
    return _export_weights(run, bert_config, _Weights(arrays, "the converted weights", None))
