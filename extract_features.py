"""Writes per-token activations of chosen encoder layers as JSON lines (the original's format).

Example:

    echo 'Who was Jim Henson ? ||| Jim Henson was a puppeteer' > input.txt
    python extract_features.py --input_file=input.txt --output_file=output.jsonl \
        --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 \
        --max_seq_length=128 --batch_size=8
"""

import os

from absl import app, flags, logging

from data import tokenization
from data.feature_extraction import (
    convert_examples_to_features,
    format_json_line,
    read_examples,
)
from modeling.bert_model import BertModel
from modeling.checkpoint import load_tf1_checkpoint
from modeling.config import BertConfig
from training.predict import extract_layers

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "One example per line: 'text_a' or 'text_a ||| text_b'.")
flags.DEFINE_string("output_file", None, "JSON lines output.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated encoder layer indexes (-1 = last).")
flags.DEFINE_string("bert_config_file", None, "bert_config.json of the pre-trained model.")
flags.DEFINE_integer("max_seq_length", 128, "Padded length in WordPiece tokens.")
flags.DEFINE_string("init_checkpoint", None, "Checkpoint (e.g. .../bert_model.ckpt).")
flags.DEFINE_string("vocab_file", None, "vocab.txt of the pre-trained model.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models).")
flags.DEFINE_integer("batch_size", 32, "Batch size for prediction.")
flags.DEFINE_bool("use_tpu", False, "Accepted for compatibility with the original; unused.")
flags.DEFINE_string("master", None, "Accepted for compatibility with the original; unused.")
flags.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility with the original; unused.")
flags.DEFINE_bool(
    "use_one_hot_embeddings", False, "Accepted for compatibility; a gather is used (same values)."
)
flags.DEFINE_bool("jit_compile", False, "Compile the forward pass with XLA.")


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
    logging.set_verbosity(logging.INFO)
    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    config.check_max_seq_length(FLAGS.max_seq_length)
    if FLAGS.batch_size < 1:
        raise ValueError(f"--batch_size must be at least 1, got {FLAGS.batch_size}.")
    layer_indexes = parse_layer_indexes(FLAGS.layers, config.num_hidden_layers)
    tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)
    examples = read_examples(FLAGS.input_file)
    features = convert_examples_to_features(examples, FLAGS.max_seq_length, tokenizer)

    model = BertModel(config)
    load_tf1_checkpoint(FLAGS.init_checkpoint, bert_model=model)

    tmp = FLAGS.output_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as writer:
        for feature, values in extract_layers(
            model, features, layer_indexes, FLAGS.batch_size, FLAGS.jit_compile
        ):
            line = format_json_line(feature.unique_id, feature.tokens, layer_indexes, values)
            writer.write(line + "\n")
    os.replace(tmp, FLAGS.output_file)
    logging.info("Wrote %d lines to %s", len(features), FLAGS.output_file)


if __name__ == "__main__":
    flags.mark_flags_as_required(
        ["input_file", "output_file", "bert_config_file", "init_checkpoint", "vocab_file"]
    )
    app.run(main)
