"""The TF Hub export: the encoder of export_model.py --task=encoder and of convert_checkpoint.py
--output_format=tfhub (one format written by both), and its matching preprocessor
(`serving.exports.tfhub`)."""

import os

import tensorflow as tf
from absl import logging

from fileio.atomic import atomic_directory
from jobs.export.saved_model import refuse_existing, write_saved_model
from jobs.export.weights import Weights, assigning, check_vocab, load
from modeling import tf1_checkpoint
from modeling.formats.conversion import SAVED_MODEL_CONFIG
from serving.exports.tfhub import build_encoder, build_preprocessor
from training.tasks import PretrainingTask


def encoder_model(bert_config, weights):
    """The encoder of the weights, loaded, with the masked-LM head where the weights hold one.

    Args:
        bert_config: `BertConfig` of the weights.
        weights: `jobs.export.weights.Weights`: the encoder's, optionally with the masked-LM
            head's.

    Returns:
        (`BertModel`, the pretraining heads or None).

    Raises:
        ValueError: weights that do not hold the encoder `bert_config` describes.
    """
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
    load("encoder", names, weights)
    logging.info("TF Hub encoder %s the mlm sub-object.", "with" if with_mlm else "without")
    return model.bert, model.cls if with_mlm else None


def encoder_export(bert_config, weights, vocab_file, do_lower_case):
    """The TF Hub encoder of the weights, loaded (see `serving.exports.tfhub.build_encoder`).

    Args:
        bert_config, weights: as `encoder_model`.
        vocab_file: the model's vocab.txt, shipped as an asset.
        do_lower_case: recorded for the encoder's users' preprocessing.

    Returns:
        The encoder's root object.

    Raises:
        ValueError: as `encoder_model`.
    """
    bert_model, heads = encoder_model(bert_config, weights)
    return build_encoder(bert_model, vocab_file, do_lower_case, heads)


def write_encoder(root, bert_config, export_dir, overwrite):
    """Saves the encoder as a SavedModel, with a copy of its config.

    TF Hub encoders carry no config; the copy at `SAVED_MODEL_CONFIG` lets convert_checkpoint.py
    read the export back.
    """

    def add_config(temp):
        tf.io.gfile.makedirs(os.path.join(temp, os.path.dirname(SAVED_MODEL_CONFIG)))
        bert_config.to_json_file(os.path.join(temp, SAVED_MODEL_CONFIG))

    write_saved_model(export_dir, overwrite, root, add_files=add_config)


def export_preprocessor(vocab_file, do_lower_case, max_seq_length, export_dir, overwrite):
    """Writes the TF Hub preprocessor SavedModel (`serving.exports.tfhub.build_preprocessor`)."""
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
    refuse_existing("export_dir", export_dir, overwrite)
    check_vocab(vocab_file, bert_config.vocab_size)
    weights = Weights(arrays, "the converted weights", None)
    # A TF Hub encoder is float32: its users fine-tune it at the precision they choose.
    with assigning("float32"):
        logging.info("Exporting --task=encoder from %s", weights.source)
        root = encoder_export(bert_config, weights, vocab_file, do_lower_case)
        write_encoder(root, bert_config, export_dir, overwrite)
    return export_dir
