"""Reading and writing BERT weights in the three formats `convert_checkpoint.py` knows.

Every reader returns the same thing: a `BertConfig`, a dict of original checkpoint names to numpy
arrays (the encoder and, when present, the `cls/*` pretraining heads) and the path of a
`vocab.txt` or None. Every writer takes that back. Formats:

* `tf1`: Google's layout, `bert_model.ckpt.{index,data-*}` + `bert_config.json` (+ `vocab.txt`).
* `keras`: this project's Keras 3 weights, `bert_config.json` plus `bert_model.weights.h5` (a
  `BertModel`) or `bert_pretrainer.weights.h5` (a `BertPretrainer`, when the heads exist).
* `hf`: a Hugging Face BERT folder (`config.json` + `model.safetensors`), read only.
"""

import os

import tensorflow as tf

from fileio.atomic import atomic_output, write_atomically
from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.hf_import import load_hf_model
from modeling.task_models import BertPretrainer

FORMATS = ("tf1", "hf", "keras")
KERAS_ENCODER_FILE = "bert_model.weights.h5"
KERAS_PRETRAINER_FILE = "bert_pretrainer.weights.h5"


def _has_heads(arrays):
    return any(name.startswith("cls/predictions/") for name in arrays)


def build_keras_model(config, arrays):
    """Builds a `BertModel` (or a `BertPretrainer` when `arrays` hold the pretraining heads)
    holding exactly `arrays`, strictly checked.

    Returns:
        (keras model, BertModel inside it).
    """
    if _has_heads(arrays):
        model = BertPretrainer(config)
        names = tf1_checkpoint.build_variable_map(
            bert_model=model.bert, pretraining_heads=model.cls
        )
        encoder = model.bert
    else:
        model = encoder = BertModel(config)
        names = tf1_checkpoint.build_variable_map(bert_model=model)
    tf1_checkpoint.assign_arrays(names, arrays, source="input weights", log=False)
    return model, encoder


def _find_vocab(directory):
    path = os.path.join(directory, "vocab.txt")
    return path if tf.io.gfile.exists(path) else None


def read_tf1(input_checkpoint, bert_config_file=None):
    """Reads an original checkpoint; the config defaults to `bert_config.json` beside it."""
    prefix = tf1_checkpoint.resolve_checkpoint_path(input_checkpoint)
    directory = os.path.dirname(prefix)
    if not bert_config_file:
        bert_config_file = os.path.join(directory, "bert_config.json")
        if not tf.io.gfile.exists(bert_config_file):
            raise ValueError(
                f"--bert_config_file is required for tf1 input: no bert_config.json beside "
                f"{prefix}."
            )
    config = BertConfig.from_json_file(bert_config_file)
    arrays = tf1_checkpoint.read_checkpoint(prefix)
    # Validate names and shapes now, so a bad pair fails before anything is written.
    build_keras_model(config, arrays)
    return config, arrays, _find_vocab(directory)


def read_keras(input_dir):
    """Reads this project's Keras format (see module docstring)."""
    if not tf.io.gfile.isdir(input_dir):
        raise ValueError(f"Keras input must be a directory holding bert_config.json: {input_dir}")
    config = BertConfig.from_json_file(os.path.join(input_dir, "bert_config.json"))
    pretrainer_file = os.path.join(input_dir, KERAS_PRETRAINER_FILE)
    encoder_file = os.path.join(input_dir, KERAS_ENCODER_FILE)
    if tf.io.gfile.exists(pretrainer_file):
        model = BertPretrainer(config)
        model.load_weights(pretrainer_file)
        names = tf1_checkpoint.build_variable_map(
            bert_model=model.bert, pretraining_heads=model.cls
        )
    elif tf.io.gfile.exists(encoder_file):
        model = BertModel(config)
        model.load_weights(encoder_file)
        names = tf1_checkpoint.build_variable_map(bert_model=model)
    else:
        raise ValueError(
            f"No Keras weights in {input_dir}: expected {KERAS_ENCODER_FILE} or "
            f"{KERAS_PRETRAINER_FILE}."
        )
    return config, tf1_checkpoint.variables_to_arrays(names), _find_vocab(input_dir)


def read_weights(input_checkpoint, input_format, bert_config_file=None):
    """Dispatches to the reader of `input_format` (one of `FORMATS`)."""
    if input_format == "tf1":
        return read_tf1(input_checkpoint, bert_config_file)
    if input_format == "keras":
        return read_keras(input_checkpoint)
    if input_format == "hf":
        return load_hf_model(input_checkpoint)
    raise ValueError(f"Unknown input format {input_format!r}; use one of {list(FORMATS)}.")


def _copy_vocab(vocab, output_dir):
    if vocab:
        target = os.path.join(output_dir, "vocab.txt")
        if os.path.abspath(vocab) != os.path.abspath(target):
            with tf.io.gfile.GFile(vocab, "rb") as reader:
                write_atomically(target, reader.read())


def write_weights(output_dir, output_format, config, arrays, vocab=None):
    """Writes `arrays` in `output_format` (`tf1` or `keras`) into `output_dir`.

    Every file is written under a temporary name and renamed, so an interrupted conversion
    leaves no half-written file under a final name.

    Returns:
        The list of files written.
    """
    tf.io.gfile.makedirs(output_dir)
    if output_format == "tf1":
        prefix = tf1_checkpoint.save_tf1_checkpoint(
            arrays, os.path.join(output_dir, "bert_model.ckpt")
        )
        written = [prefix + ".index", prefix + ".data-00000-of-00001"]
    elif output_format == "keras":
        model, _ = build_keras_model(config, arrays)
        name = KERAS_PRETRAINER_FILE if isinstance(model, BertPretrainer) else KERAS_ENCODER_FILE
        path = os.path.join(output_dir, name)
        with atomic_output(path) as temp:
            model.save_weights(temp)
        written = [path]
    else:
        raise ValueError(f"Unknown output format {output_format!r}; use 'tf1' or 'keras'.")
    config.to_json_file(os.path.join(output_dir, "bert_config.json"))
    written.append(os.path.join(output_dir, "bert_config.json"))
    _copy_vocab(vocab, output_dir)
    if vocab:
        written.append(os.path.join(output_dir, "vocab.txt"))
    return written
