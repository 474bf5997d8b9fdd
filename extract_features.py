r"""Writes per-token activations of chosen encoder layers as JSON lines (the original's format),
or pooled per line, or as npy, safetensors or TFRecord files (docs/features.md).

Example:

    echo 'Who was Jim Henson ? ||| Jim Henson was a puppeteer' > input.txt
    python extract_features.py --input_file=input.txt --output_file=output.jsonl \
        --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 \
        --max_seq_length=128 --batch_size=8
"""

from absl import flags

from command_line import flags as runner_flags
from command_line.flag_rules import check_flags
from command_line.tensorflow_logs import log_at_info, quiet_tensorflow_logs
from data.extraction import options
from data.tokenization.full_tokenizer import FullTokenizer
from fileio.errors import run_command
from modeling.config import BertConfig
from training.settings import settings_from_flags

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

flags.DEFINE_string("input_file", None, "One example per line: 'text_a' or 'text_a ||| text_b'.")
flags.DEFINE_string("output_file", None, "The output file (--output_format).")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated encoder layer indexes (-1 = last).")
runner_flags.define_model_flags()
flags.DEFINE_integer("max_seq_length", 128, "Padded length in WordPiece tokens.")
flags.DEFINE_integer("batch_size", 32, "Batch size for prediction.")
flags.DEFINE_bool("use_tpu", False, "Accepted for compatibility with the original; unused.")
flags.DEFINE_string("master", None, "Accepted for compatibility with the original; unused.")
flags.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility with the original; unused.")
flags.DEFINE_bool(
    "use_one_hot_embeddings", False, "Accepted for compatibility; a gather is used (same values)."
)
flags.DEFINE_bool("jit_compile", False, "Compile the forward pass with XLA.")
runner_flags.define_precision_flag()
flags.DEFINE_bool(
    "pad_to_max_seq_length",
    False,
    "Run every batch at --max_seq_length, as the original; by default lines are batched by "
    "length and each batch cut to its longest (the same values, written in input order).",
)
flags.DEFINE_enum(
    "pooling",
    "none",
    options.POOLINGS,
    "none: every token's values (the original); mean / max over the line's tokens ([CLS] and "
    "[SEP] included); cls: the [CLS] token; first_last_mean: the mean over tokens of the "
    "average of the first and last encoder layers.",
)
flags.DEFINE_enum(
    "layer_combine",
    "concatenate",
    options.LAYER_COMBINES,
    "concatenate: the --layers side by side, in their order (the original); mean: their average.",
)
flags.DEFINE_enum(
    "output_format",
    "jsonl",
    options.OUTPUT_FORMATS,
    "jsonl (the original's), npy, safetensors or tfrecord; layouts in docs/features.md.",
)
flags.DEFINE_enum(
    "output_dtype", "float32", options.OUTPUT_DTYPES, "Value type of npy and safetensors files."
)
flags.DEFINE_integer(
    "doc_stride",
    None,
    "Cut lines longer than --max_seq_length into windows starting this many pieces apart, each "
    "token taken from the window where it has the most context; unset: truncate as the original.",
)


def parse_layer_indexes(text, num_layers):
    """Parses --layers; every index must address one of the model's layers."""
    try:
        indexes = [int(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"--layers must be comma-separated integers, got {text!r}.") from None
    for index in indexes:
        if not -num_layers <= index < num_layers:
            raise ValueError(
                f"--layers index {index} is out of range for a model with {num_layers} layers "
                f"(use -{num_layers}..{num_layers - 1})."
            )
    return indexes


def main(_):
    log_at_info(FLAGS)
    runner_flags.warn_if_given(
        FLAGS,
        ("use_tpu", "master", "num_tpu_cores"),
        "extract_features runs on this machine's CPU or GPU, never on a TPU",
    )
    check_flags(FLAGS)
    options.check_output_options(
        FLAGS.pooling,
        FLAGS.layer_combine,
        FLAGS.output_format,
        FLAGS.output_dtype,
        layers_given=FLAGS["layers"].present,
        combine_given=FLAGS["layer_combine"].present,
    )
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    config.check_max_seq_length(FLAGS.max_seq_length)
    if FLAGS.pooling == "first_last_mean":
        # Its own layers (the default --layers may not exist in a small model).
        layers, combine = list(options.FIRST_LAST_LAYERS), "mean"
    else:
        layers = parse_layer_indexes(FLAGS.layers, config.num_hidden_layers)
        combine = FLAGS.layer_combine
    tokenizer = FullTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)
    # TensorFlow loads here, once the command line is known to work.
    from jobs.extraction_run import ExtractionRun, extract_features
    from training.strategy import create_strategy

    run = settings_from_flags(ExtractionRun, FLAGS, layers=layers, layer_combine=combine)
    extract_features(run, config, tokenizer, create_strategy("one_device"))


if __name__ == "__main__":
    flags.mark_flags_as_required(
        ["input_file", "output_file", "bert_config_file", "init_checkpoint", "vocab_file"]
    )
    run_command(main)
