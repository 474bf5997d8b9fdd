"""Original (TF1, name-based) BERT checkpoints: the name table, strict loading and saving.

The one table from original checkpoint names to this project's Keras variables is built by the
`*_variable_map` functions below, from layer attributes rather than Keras paths, so it does not
depend on how a Keras version spells paths.
"""

import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from fileio.atomic import atomic_prefix

# `resolve_checkpoint_path` (the one resolver of user paths) stays importable from here.
from modeling.checkpoint_files import open_checkpoint, read_tensors, resolve_checkpoint_path

# Training checkpoints (model.ckpt-N) keep state the original had no name for (dropout seeds,
# the float16 loss scale) under this prefix.
TRAINING_STATE_PREFIX = "_training_state/"
# Names in checkpoints that are training state, never weights: the original's optimizer slots and
# step, and this project's extra state.
_TRAINING_STATE_NAME = re.compile(
    r"(/adam_[mv]$|^global_step$|/(Adam|Momentum|LAMB)(_\d+)?$|^" + TRAINING_STATE_PREFIX + ")"
)

# Names of heads that a checkpoint may carry although the model being loaded lacks them (a
# released checkpoint has cls/* pretraining heads; a fine-tuned one has a task head).
_HEAD_NAME = re.compile(r"^(cls/|output_weights$|output_bias$)")


def is_training_state(name):
    """True for `global_step`, optimizer slots such as `X/adam_m`, and `_training_state/*`."""
    return bool(_TRAINING_STATE_NAME.search(name))


def _dense(prefix, layer):
    return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(prefix, layer):
    return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def encoder_variable_map(bert_model):
    """Original name -> variable for every weight of a `BertModel` (scope `bert`).

    Args:
        bert_model: a `modeling.BertModel`.

    Returns:
        dict from original checkpoint name (e.g. `bert/pooler/dense/kernel`) to its variable.
    """
    emb = bert_model.embeddings
    names = {
        "bert/embeddings/word_embeddings": emb.word_embeddings,
        "bert/embeddings/token_type_embeddings": emb.token_type_embeddings,
        "bert/embeddings/position_embeddings": emb.position_embeddings,
        **_layer_norm("bert/embeddings/LayerNorm", emb.layer_norm),
    }
    for i, layer in enumerate(bert_model.encoder.transformer_layers):
        p = f"bert/encoder/layer_{i}"
        att = layer.attention
        names.update(_dense(f"{p}/attention/self/query", att.self_attention.query))
        names.update(_dense(f"{p}/attention/self/key", att.self_attention.key))
        names.update(_dense(f"{p}/attention/self/value", att.self_attention.value))
        names.update(_dense(f"{p}/attention/output/dense", att.output_block.dense))
        names.update(_layer_norm(f"{p}/attention/output/LayerNorm", att.output_block.layer_norm))
        names.update(_dense(f"{p}/intermediate/dense", layer.intermediate.dense))
        names.update(_dense(f"{p}/output/dense", layer.output_block.dense))
        names.update(_layer_norm(f"{p}/output/LayerNorm", layer.output_block.layer_norm))
    names.update(_dense("bert/pooler/dense", bert_model.pooler.dense))
    return names


def encoder_shapes(bert_config):
    """Original name -> shape of every weight of a `BertModel` of `bert_config` (the names of
    `encoder_variable_map`), from the config alone, so that a checkpoint can be checked against
    a config before any model is built."""
    h, inner = bert_config.hidden_size, bert_config.intermediate_size

    def dense(prefix, width_in, width_out):
        return {f"{prefix}/kernel": (width_in, width_out), f"{prefix}/bias": (width_out,)}

    def layer_norm(prefix):
        return {f"{prefix}/gamma": (h,), f"{prefix}/beta": (h,)}

    shapes = {
        "bert/embeddings/word_embeddings": (bert_config.vocab_size, h),
        "bert/embeddings/token_type_embeddings": (bert_config.type_vocab_size, h),
        "bert/embeddings/position_embeddings": (bert_config.max_position_embeddings, h),
        **layer_norm("bert/embeddings/LayerNorm"),
    }
    for i in range(bert_config.num_hidden_layers):
        p = f"bert/encoder/layer_{i}"
        for part in ("query", "key", "value"):
            shapes.update(dense(f"{p}/attention/self/{part}", h, h))
        shapes.update(dense(f"{p}/attention/output/dense", h, h))
        shapes.update(layer_norm(f"{p}/attention/output/LayerNorm"))
        shapes.update(dense(f"{p}/intermediate/dense", h, inner))
        shapes.update(dense(f"{p}/output/dense", inner, h))
        shapes.update(layer_norm(f"{p}/output/LayerNorm"))
    shapes.update(dense("bert/pooler/dense", h, h))
    return shapes


def encoder_misfits(prefix, bert_config):
    """What keeps the checkpoint at `prefix` from initialising a model of `bert_config` the way
    the fine-tuning runs load it (`assign_arrays(..., strict=False)`), read from its index alone.

    Heads (`cls/*`, `output_*`) and training state are the task's business and skipped; weights
    the checkpoint lacks are not misfits (the runs keep them as initialised, as the original).

    Returns:
        One phrase per weight of another shape than the config's model has, or absent from it;
        empty when the checkpoint fits.

    Raises:
        DamagedCheckpointError: the index cannot be read.
    """
    shapes = open_checkpoint(prefix).get_variable_to_shape_map()
    expected = encoder_shapes(bert_config)
    misfits = []
    for name in sorted(shapes):
        if is_training_state(name) or _HEAD_NAME.search(name):
            continue
        shape = tuple(shapes[name])
        if name not in expected:
            misfits.append(f"{name} {_shape_str(shape)} is not in the config's model")
        elif shape != expected[name]:
            misfits.append(
                f"{name} is {_shape_str(shape)} where the config's model has "
                f"{_shape_str(expected[name])}"
            )
    return misfits


def pretraining_heads_variable_map(heads):
    """Original names of a `PretrainingHeads` layer (the MLM decoder matrix is the tied
    `bert/embeddings/word_embeddings`, owned by the encoder)."""
    mlm = heads.predictions
    nsp = heads.seq_relationship
    return {
        **_dense("cls/predictions/transform/dense", mlm.transform.dense),
        **_layer_norm("cls/predictions/transform/LayerNorm", mlm.transform.layer_norm),
        "cls/predictions/output_bias": mlm.output_bias,
        "cls/seq_relationship/output_weights": nsp.output_weights,
        "cls/seq_relationship/output_bias": nsp.output_bias,
    }


def classifier_variable_map(head):
    """run_classifier's top-level `output_weights` / `output_bias` of a `ClassifierHead`."""
    return {
        "output_weights": head.projection.output_weights,
        "output_bias": head.projection.output_bias,
    }


def span_variable_map(head):
    """run_squad's `cls/squad/*` variables of a `SpanHead`."""
    return {
        "cls/squad/output_weights": head.projection.output_weights,
        "cls/squad/output_bias": head.projection.output_bias,
    }


def token_classifier_variable_map(head):
    """This project's `cls/ner/*` variables of a `TokenClassifierHead`."""
    return {
        "cls/ner/output_weights": head.projection.output_weights,
        "cls/ner/output_bias": head.projection.output_bias,
    }


def build_variable_map(
    bert_model=None, pretraining_heads=None, classifier=None, span=None, token_classifier=None
):
    """Merges the name maps of the given parts into one dict (name -> variable)."""
    parts = [
        (bert_model, encoder_variable_map),
        (pretraining_heads, pretraining_heads_variable_map),
        (classifier, classifier_variable_map),
        (span, span_variable_map),
        (token_classifier, token_classifier_variable_map),
    ]
    names = {}
    for part, fn in parts:
        if part is not None:
            names.update(fn(part))
    return names


def read_checkpoint(path, include_optimizer=False):
    """Reads every tensor of a name-based checkpoint into numpy arrays.

    Args:
        path: checkpoint prefix or directory (see `resolve_checkpoint_path`).
        include_optimizer: keep the training state too: `global_step`, optimizer slots and
            `_training_state/*` (see `is_training_state`).

    Returns:
        dict name -> np.ndarray.

    Raises:
        UserError: nothing matches `path`, or its files are damaged (`DamagedCheckpointError`).
    """
    return read_tensors(
        resolve_checkpoint_path(path), lambda name: include_optimizer or not is_training_state(name)
    )


def _shape_str(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


# The last line of a mismatch error where nothing more specific is known: most mismatches come
# from a config of another model.
CONFIG_ADVICE = (
    "Check that --bert_config_file belongs to this checkpoint (layers, hidden size, vocab_size, "
    "type_vocab_size, max_position_embeddings)."
)


def array_mismatches(variable_map, arrays, allow_missing=False, ignore_heads=True):
    """The lines of `check_arrays_match`'s error: every name missing, unexpected or of another
    shape (arguments as there); empty when the arrays fit."""
    problems = []
    for name, var in variable_map.items():
        if name not in arrays:
            if not allow_missing:
                problems.append(f"  missing in checkpoint: {name} {_shape_str(var.shape)}")
        elif tuple(arrays[name].shape) != tuple(var.shape):
            problems.append(
                f"  shape mismatch: {name}: checkpoint {_shape_str(arrays[name].shape)} vs "
                f"model {_shape_str(var.shape)}"
            )
    for name in arrays:
        if name not in variable_map and not (ignore_heads and _HEAD_NAME.search(name)):
            problems.append(f"  unexpected in checkpoint: {name} {_shape_str(arrays[name].shape)}")
    return problems


def mismatch_error(source, problems, advice=CONFIG_ADVICE):
    """The ValueError listing `problems` (lines of `array_mismatches`), `advice` its last line."""
    return ValueError(
        f"Checkpoint {source} does not match the model ({len(problems)} problems):\n"
        + "\n".join(problems)
        + "\n"
        + advice
    )


def check_arrays_match(
    variable_map, arrays, source, allow_missing=False, ignore_heads=True, problems=()
):
    """Compares a name map with checkpoint arrays and raises one error listing every problem.

    Args:
        variable_map: dict name -> variable (the model side).
        arrays: dict name -> np.ndarray (the checkpoint side, optimizer slots removed).
        source: what `arrays` came from, for the message.
        allow_missing: accept model variables absent from the checkpoint (they keep their
            initial values, as the original's `init_from_checkpoint` leaves task heads).
        ignore_heads: accept checkpoint heads (`cls/*`, `output_*`) the model does not have.
        problems: lines the caller found already, listed first in the same error.

    Raises:
        ValueError: listing missing names, unexpected names and shape mismatches (both shapes).
    """
    problems = [*problems, *array_mismatches(variable_map, arrays, allow_missing, ignore_heads)]
    if problems:
        raise mismatch_error(source, problems)


def assign_arrays(variable_map, arrays, source="arrays", strict=True, log=True):
    """Assigns checkpoint arrays to model variables, after `check_arrays_match`.

    Args:
        variable_map: dict name -> variable.
        arrays: dict name -> np.ndarray.
        source: description of `arrays` for messages.
        strict: every model variable must be in `arrays`; when False, absent ones keep their
            initial values (the original's `init_checkpoint` behaviour for task heads).
        log: log a summary line (counts, variables not restored) and, at verbosity 1, the
            original's listing `name = ..., shape = ...[, *INIT_FROM_CKPT*]`.

    Returns:
        The sorted list of names that were assigned.
    """
    check_arrays_match(variable_map, arrays, source, allow_missing=not strict)
    loaded = []
    for name, var in variable_map.items():
        if name in arrays:
            var.assign(arrays[name].astype(var.dtype))
            loaded.append(name)
    if log:
        missing = [name for name in variable_map if name not in arrays]
        logging.info(
            "Initialized %d of %d variables from %s%s",
            len(loaded),
            len(variable_map),
            source,
            f"; not in the checkpoint, kept as initialised: {', '.join(missing)}"
            if missing
            else "",
        )
        # The original's full listing, with --verbosity=1 (or -v 1).
        logging.vlog(1, "**** Trainable Variables ****")
        for name, var in variable_map.items():
            suffix = ", *INIT_FROM_CKPT*" if name in arrays else ""
            logging.vlog(1, "  name = %s, shape = %s%s", name, tuple(var.shape), suffix)
    return sorted(loaded)


def load_tf1_checkpoint(path, strict=True, **parts):
    """Loads an original name-based checkpoint (e.g. Google's `bert_model.ckpt`).

    Example:

        bert = BertModel(BertConfig.from_json_file(".../bert_config.json"))
        heads = PretrainingHeads(bert.config)
        load_tf1_checkpoint(".../bert_model.ckpt", bert_model=bert, pretraining_heads=heads)

    Args:
        path: checkpoint prefix or directory.
        strict: see `assign_arrays`.
        **parts: `bert_model=`, `pretraining_heads=`, `classifier=`, `span=`,
            `token_classifier=` (see `build_variable_map`).

    Returns:
        The sorted list of loaded names.

    Raises:
        ValueError: for a missing or damaged checkpoint or any name or shape mismatch (all
            listed at once).
    """
    prefix = resolve_checkpoint_path(path)
    return assign_arrays(build_variable_map(**parts), read_checkpoint(prefix), prefix, strict)


def variables_to_arrays(variable_map):
    """dict name -> np.ndarray of the current values."""
    return {name: np.asarray(var.numpy()) for name, var in variable_map.items()}


def save_tf1_checkpoint(arrays, prefix):
    """Writes arrays as an original-layout, name-based checkpoint (`prefix.index`, `.data-*`).

    The files are written under a temporary prefix in the same directory, then renamed
    (`fileio.atomic.atomic_prefix`), so a crash never leaves a half-written checkpoint under the
    final name.

    Args:
        arrays: dict original name -> np.ndarray.
        prefix: e.g. `out/bert_model.ckpt`.

    Returns:
        `prefix`.
    """
    tf.io.gfile.makedirs(os.path.dirname(prefix) or ".")
    names = sorted(arrays)
    # The index goes last: its presence is what makes a checkpoint visible.
    with atomic_prefix(prefix, last_suffix=".index") as temp, tf.device("/cpu:0"):
        tf.raw_ops.SaveV2(
            prefix=temp,
            tensor_names=names,
            shape_and_slices=[""] * len(names),
            tensors=[tf.constant(arrays[n]) for n in names],
        )
    return prefix
