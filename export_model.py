r"""Exports a trained model as a SavedModel (raw text in, the answer out), TF Hub format or TFLite.

    # A GLUE classifier fine-tuned by run_classifier.py: sentences in, label and probabilities out.
    python export_model.py --task=classifier --task_name=MRPC \
        --checkpoint=/tmp/mrpc_output --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --vocab_file=$BERT_BASE_DIR/vocab.txt --max_seq_length=128 --export_dir=/tmp/mrpc_model

    # Google's checkpoint as a TF Hub encoder (plus the matching preprocessor).
    python export_model.py --task=encoder --checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
        --bert_config_file=$BERT_BASE_DIR/bert_config.json --vocab_file=$BERT_BASE_DIR/vocab.txt \
        --export_dir=/tmp/bert_encoder --preprocessor_export_dir=/tmp/bert_preprocess

    # The same classifier for CPU serving: int8 TFLite (serve.py --model=/tmp/mrpc_int8).
    python export_model.py --task=classifier --task_name=MRPC --quantize=int8 \
        --checkpoint=/tmp/mrpc_output --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --vocab_file=$BERT_BASE_DIR/vocab.txt --export_dir=/tmp/mrpc_int8

`--checkpoint` is an output_dir (its latest model.ckpt-N) or a checkpoint prefix. The export is
written under a temporary name and renamed; an existing --export_dir is replaced only with
--overwrite. Loading a text-in export needs `import tensorflow_text` (the WordPiece op).
"""

from absl import flags

from command_line.earlier_run import take_settings_of_run
from command_line.flag_rules import check_flags, default_stride, ner_window, squad_window
from command_line.flags import (
    define_long_input_flags,
    define_precision_flag,
    warn_if_given,
    warn_unused_long_input_flags,
)
from command_line.tensorflow_logs import log_at_info, quiet_tensorflow_logs
from fileio.errors import UserError, run_command
from modeling.config import BertConfig
from training.settings import TASK_DEFAULTS, settings_from_flags

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

flags.DEFINE_enum(
    "task",
    None,
    ["classifier", "ner", "squad", "encoder", "pretraining"],
    "What to export: a fine-tuned classifier, NER tagger or SQuAD model (text in, answer out), "
    "the TF Hub encoder, or the pre-training model (ids in, MLM and NSP logits out).",
)
flags.DEFINE_string("task_name", None, "--task=classifier: the GLUE/XNLI task (e.g. MRPC).")
flags.DEFINE_string("checkpoint", None, "An output_dir (its latest checkpoint) or a prefix.")
flags.DEFINE_string("bert_config_file", None, "bert_config.json of the model.")
flags.DEFINE_string("vocab_file", None, "vocab.txt the model was trained with.")
flags.DEFINE_bool(
    "do_lower_case",
    None,
    "As for training: default true, but false for --task=ner (run_ner's default, cased models).",
)
flags.DEFINE_integer(
    "max_seq_length",
    None,
    "As for training (default: the run's flags.txt beside --checkpoint, else the runner's "
    "default: 384 for squad, else 128).",
)
flags.DEFINE_string("export_dir", None, "Where the SavedModel goes.")
flags.DEFINE_string(
    "preprocessor_export_dir",
    None,
    "--task=encoder: also write the TF Hub preprocessor here (seq_length = --max_seq_length).",
)
flags.DEFINE_string(
    "label_file", None, "--task=ner: the run's labels.txt (default: beside the checkpoint)."
)
flags.DEFINE_integer(
    "doc_stride",
    None,
    "--task=ner/squad, and --task=classifier with --long_inputs=windows: as for training "
    "(default: the run's, else the runner's: 64 / 128, or half the window where that would "
    "leave consecutive windows no shared context; for the classifier, half of each text's "
    "room).",
)
flags.DEFINE_integer(
    "max_query_length", None, "--task=squad: as for training (default: the run's, else 64)."
)
flags.DEFINE_integer(
    "n_best_size", None, "--task=squad: as for run_squad.py (default: the run's, else 20)."
)
flags.DEFINE_integer(
    "max_answer_length", None, "--task=squad: as for run_squad.py (default: the run's, else 30)."
)
flags.DEFINE_bool("version_2_with_negative", False, "--task=squad: a SQuAD 2.0 model.")
flags.DEFINE_float(
    "null_score_diff_threshold",
    None,
    "--task=squad, SQuAD 2.0: the null threshold; default: the best_null_score_diff_threshold "
    "that run_squad.py --do_eval wrote beside the checkpoint.",
)
flags.DEFINE_bool("overwrite", False, "Replace an existing --export_dir.")
flags.DEFINE_enum(
    "format",
    None,
    ["saved_model", "tflite"],
    "saved_model (default: text in, the answer out) or tflite (ids in, the head's logits out, "
    "any batch and length; tokenizer.json and serving.json beside it; serve.py answers from "
    "it). Default: tflite with --quantize=int8, else saved_model.",
)
flags.DEFINE_enum(
    "quantize",
    "none",
    ["none", "int8"],
    "int8: TFLite dynamic-range quantization (int8 weights and matrix products, ~4x smaller, "
    "faster on CPUs; see docs/serving.md). --task=classifier, ner, squad or encoder.",
)
define_precision_flag()
# --task=classifier: long inputs cut as the run was trained (default: the run's flags.txt).
define_long_input_flags(with_stride=False)
flags.DEFINE_bool(
    "pad_to_max_seq_length",
    False,
    "--task=classifier: run every request batch at --max_seq_length (static shapes, as a TPU "
    "needs) instead of at its longest sequence.",
)


# Settings export_model.py shares with the runners: by default, the trained run's own.
_RUN_SETTINGS = (
    "task_name",
    "do_lower_case",
    "max_seq_length",
    "doc_stride",
    "max_query_length",
    "n_best_size",
    "max_answer_length",
    "version_2_with_negative",
    "long_inputs",
    "head_tokens",
    "window_aggregation",
)


def main(_):
    log_at_info(FLAGS)
    export_format = FLAGS.format or ("tflite" if FLAGS.quantize == "int8" else "saved_model")
    if FLAGS.quantize == "int8" and export_format != "tflite":
        raise UserError(
            "--quantize=int8 writes a TFLite model: drop --format=saved_model (or pass "
            "--format=tflite)."
        )
    take_settings_of_run(FLAGS, FLAGS.checkpoint, _RUN_SETTINGS)
    if FLAGS.task == "classifier":
        warn_unused_long_input_flags(FLAGS)
        if FLAGS.long_inputs != "windows":
            warn_if_given(FLAGS, ("doc_stride",), "it applies to --long_inputs=windows")
    else:
        why = "it applies to --task=classifier"
        warn_if_given(FLAGS, ("long_inputs", "head_tokens", "window_aggregation"), why)
    lower_case = FLAGS.do_lower_case
    if lower_case is None:
        lower_case = FLAGS.task != "ner"
    # Settings neither given nor saved by the run: the task's runner's defaults.
    given = {
        name: FLAGS[name].value if FLAGS[name].value is not None else value
        for name, value in TASK_DEFAULTS[FLAGS.task].items()
    }
    if FLAGS.doc_stride is None and "doc_stride" in given:
        # A fallback stride, like run_ner's default, never leaves windows without overlap.
        length = given["max_seq_length"]
        if FLAGS.task == "squad":
            window = squad_window(length, given["max_query_length"])
        else:
            window = ner_window(length)
        given["doc_stride"] = default_stride(given["doc_stride"], window)
    check_flags(FLAGS, **given)
    bert_config = BertConfig.from_json_file(FLAGS.bert_config_file)
    if FLAGS.task in ("classifier", "ner", "squad") or FLAGS.preprocessor_export_dir:
        # These pack requests to --max_seq_length (the ids-in exports take any length the
        # model does): a longer one would read past the position table.
        bert_config.check_max_seq_length(given["max_seq_length"])
    # TensorFlow loads here, once the command line is known to work.
    from jobs.export_run import ExportRun, export_model

    run = settings_from_flags(
        ExportRun, FLAGS, do_lower_case=lower_case, format=export_format, **given
    )
    export_model(run, bert_config)


if __name__ == "__main__":
    flags.mark_flags_as_required(
        ["task", "checkpoint", "bert_config_file", "vocab_file", "export_dir"]
    )
    run_command(main)
