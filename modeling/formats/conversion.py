"""Reading and writing BERT weights in the formats `convert_checkpoint.py` knows.

Every reader returns the same thing: a `BertConfig`, a dict of original checkpoint names to numpy
arrays (the encoder and, when present, the `cls/*` pretraining heads) and the path of a
`vocab.txt` or None. Every writer takes that back. Formats:

* `tf1`: Google's layout, `bert_model.ckpt.{index,data-*}` + `bert_config.json` (+ `vocab.txt`).
* `keras`: this project's Keras 3 weights, `bert_config.json` plus `bert_model.weights.h5` (a
  `BertModel`) or `bert_pretrainer.weights.h5` (a `BertPretrainer`, when the heads exist).
* `hf`: a Hugging Face BERT folder (`config.json` + `model.safetensors` + `vocab.txt` and its
  tokenizer's settings, `tokenizer_config.json` and `special_tokens_map.json`).
* `tf2`: Model Garden's object-based encoder or pretrainer checkpoint (read only).
* `tfhub`: a TF Hub BERT encoder SavedModel, from Model Garden's exporter or this project's
  `export_model.py --task=encoder` (written by `jobs.export.tfhub`, not here).
* `keras_hub`: a keras-hub `BertBackbone` / `BertMaskedLM` preset directory.
"""

import os

import numpy as np
import tensorflow as tf

from fileio.atomic import atomic_directory, require_free_space, write_atomically
from fileio.errors import UserError, first_line
from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.formats import (
    INPUT_FORMATS,
    OUTPUT_FORMATS,
    hf_export,
    keras_hub,
    model_garden,
    task_heads,
)
from modeling.formats.hf_import import load_hf_model
from modeling.heads import PretrainingHeads
from modeling.layers import weights_from_checkpoint
from modeling.task_models import BertPretrainer

# Where this project's TF Hub exports keep the model's bert_config.json (files TensorFlow ignores).
SAVED_MODEL_CONFIG = os.path.join("assets.extra", "bert_config.json")
_HEAD_GROUPS = ("cls/predictions/", "cls/seq_relationship/")
KERAS_ENCODER_FILE = "bert_model.weights.h5"
KERAS_PRETRAINER_FILE = "bert_pretrainer.weights.h5"


def _is_pretrainer(arrays):
    """Whether `arrays` hold the masked LM, so that they fill a `BertPretrainer`."""
    return any(name.startswith("cls/predictions/") for name in arrays)


def validate(config, arrays, source):
    """Checks `arrays` against the model `config` describes, strictly.

    The encoder must be complete; each pretraining head (masked LM, next sentence) must be
    complete or absent; nothing else may be there.

    A fine-tuned model's task head (`modeling.formats.task_heads`) may be there too.

    Raises:
        ValueError: one error listing every missing, unexpected or mis-shaped tensor.
    """
    _, problems = task_heads.problems(arrays, config.hidden_size)
    arrays = {n: v for n, v in arrays.items() if not task_heads.is_task_head_name(n)}
    names = tf1_checkpoint.build_variable_map(
        bert_model=BertModel(config), pretraining_heads=PretrainingHeads(config)
    )
    present = [g for g in _HEAD_GROUPS if any(n.startswith(g) for n in arrays)]
    wanted = {
        n: v for n, v in names.items() if not n.startswith("cls/") or n.startswith(tuple(present))
    }
    tf1_checkpoint.check_arrays_match(wanted, arrays, source, ignore_heads=False, problems=problems)


def build_keras_model(config, arrays):
    """Builds a `BertModel` (or a `BertPretrainer` when `arrays` hold the pretraining heads)
    holding exactly `arrays`, strictly checked.

    Returns:
        (keras model, BertModel inside it).
    """
    # The strict assignment below sets every variable, so none is drawn at random.
    with weights_from_checkpoint():
        if _is_pretrainer(arrays):
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
    return config, arrays, _find_vocab(directory)


def _config_beside(path, bert_config_file, what):
    """`bert_config_file`, else the bert_config.json in (or beside) `path`."""
    if bert_config_file:
        return BertConfig.from_json_file(bert_config_file)
    directory = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
    candidate = os.path.join(directory, "bert_config.json")
    if not tf.io.gfile.exists(candidate):
        raise ValueError(
            f"--bert_config_file is required for {what} input: no bert_config.json in "
            f"{directory}. Pass the original bert_config.json of this model."
        )
    return BertConfig.from_json_file(candidate)


def read_tf2(path, bert_config_file=None):
    """Reads a Model Garden object-based checkpoint (see `modeling.formats.model_garden`)."""
    arrays = model_garden.read_tf2_checkpoint(path)
    config = _config_beside(path, bert_config_file, "tf2")
    directory = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
    return config, arrays, _find_vocab(directory)


def read_tfhub(export_dir, bert_config_file=None):
    """Reads a TF Hub BERT encoder SavedModel (Model Garden's or this project's).

    The `mlm` sub-object's head is read when there is one. This project's exports carry their
    bert_config.json; for others pass `bert_config_file`.
    """
    if not tf.saved_model.contains_saved_model(export_dir):
        raise ValueError(f"{export_dir} holds no SavedModel (saved_model.pb is missing).")
    try:
        loaded = tf.saved_model.load(export_dir)
    except (OSError, IndexError, KeyError, tf.errors.OpError) as err:
        # saved_model.pb unparsable (OSError), variables cut short (IndexError), an index
        # or data file damaged (OpError: DataLoss, "too short to be an sstable", ...).
        raise UserError(
            f"{export_dir} is a damaged or truncated SavedModel ({first_line(err)}): export or "
            "download it again."
        ) from None
    if not hasattr(loaded, "variables") or not callable(loaded):
        raise ValueError(
            f"{export_dir} is a SavedModel but not a TF Hub text encoder (no callable root with "
            "variables): export the encoder (e.g. export_model.py --task=encoder)."
        )
    variables = list(loaded.variables)
    if hasattr(loaded, "mlm"):
        variables += list(loaded.mlm.variables)
    named = {}
    for var in variables:
        name = var.name.split(":")[0]
        # Dropout seed states and the do_lower_case flag are not weights.
        if var.dtype != tf.float32 or "seed_generator" in name:
            continue
        named[name] = var.numpy()
    if not named:
        raise ValueError(f"{export_dir} has no float32 variables: not a BERT encoder SavedModel.")
    if any(n.startswith("bert/embeddings/") for n in named):
        arrays = {n: np.asarray(v, np.float32) for n, v in named.items()}
    else:
        arrays = model_garden.model_garden_variables_to_original(named)
    own_config = os.path.join(export_dir, SAVED_MODEL_CONFIG)
    if not bert_config_file and tf.io.gfile.exists(own_config):
        bert_config_file = own_config
    if not bert_config_file:
        raise ValueError(
            f"--bert_config_file is required for this SavedModel: {export_dir} does not carry "
            f"{SAVED_MODEL_CONFIG}. Pass the bert_config.json of the model it was exported from."
        )
    vocab = None
    if hasattr(loaded, "vocab_file"):
        vocab = loaded.vocab_file.asset_path.numpy().decode("utf-8")
    return BertConfig.from_json_file(bert_config_file), arrays, vocab


def _load_keras_weights(model, path):
    """`model.load_weights(path)`, a damaged or truncated file named as such."""
    try:
        model.load_weights(path)
    except (OSError, KeyError, RuntimeError) as err:
        # h5py: "Unable to synchronously open file (truncated file: ...)", unreadable datasets.
        raise UserError(
            f"{path} is damaged or truncated ({first_line(err)}): convert the checkpoint to "
            "the keras format again."
        ) from None


def read_keras(input_dir):
    """Reads this project's Keras format (see module docstring)."""
    if not tf.io.gfile.isdir(input_dir):
        raise ValueError(f"Keras input must be a directory holding bert_config.json: {input_dir}")
    config = BertConfig.from_json_file(os.path.join(input_dir, "bert_config.json"))
    pretrainer_file = os.path.join(input_dir, KERAS_PRETRAINER_FILE)
    encoder_file = os.path.join(input_dir, KERAS_ENCODER_FILE)
    if tf.io.gfile.exists(pretrainer_file):
        model = BertPretrainer(config)
        _load_keras_weights(model, pretrainer_file)
        names = tf1_checkpoint.build_variable_map(
            bert_model=model.bert, pretraining_heads=model.cls
        )
    elif tf.io.gfile.exists(encoder_file):
        model = BertModel(config)
        _load_keras_weights(model, encoder_file)
        names = tf1_checkpoint.build_variable_map(bert_model=model)
    else:
        raise ValueError(
            f"No Keras weights in {input_dir}: expected {KERAS_ENCODER_FILE} or "
            f"{KERAS_PRETRAINER_FILE}."
        )
    return config, tf1_checkpoint.variables_to_arrays(names), _find_vocab(input_dir)


def read_weights(input_checkpoint, input_format, bert_config_file=None):
    """Reads and validates weights in `input_format` (one of `INPUT_FORMATS`).

    Returns:
        (BertConfig, dict original name -> np.ndarray, vocab path or None).

    Raises:
        ValueError: for unreadable input or weights that do not match the config, every problem
            listed at once.
    """
    if input_format == "tf1":
        config, arrays, vocab = read_tf1(input_checkpoint, bert_config_file)
    elif input_format == "keras":
        config, arrays, vocab = read_keras(input_checkpoint)
    elif input_format == "hf":
        config, arrays, vocab = load_hf_model(input_checkpoint)
    elif input_format == "tf2":
        config, arrays, vocab = read_tf2(input_checkpoint, bert_config_file)
    elif input_format == "tfhub":
        config, arrays, vocab = read_tfhub(input_checkpoint, bert_config_file)
    elif input_format == "keras_hub":
        config, arrays, vocab = keras_hub.read_keras_hub(input_checkpoint)
    else:
        raise ValueError(
            f"Unknown input format {input_format!r}; use one of {list(INPUT_FORMATS)}."
        )
    # Names and shapes checked now, so a bad pair fails before anything is written.
    validate(config, arrays, input_checkpoint)
    return config, arrays, vocab


def _copy_vocab(vocab, output_dir):
    target = os.path.join(output_dir, "vocab.txt")
    with tf.io.gfile.GFile(vocab, "rb") as reader:
        write_atomically(target, reader.read())
    return target


def check_output_dir(output_dir, overwrite):
    """Refuses an existing, non-empty `output_dir` unless `overwrite`; call it before any work.

    Returns:
        Whether the directory may be replaced (true for an empty one: nothing to lose).

    Raises:
        FileExistsError: naming the directory and `--overwrite`.
    """
    if tf.io.gfile.isdir(output_dir) and not tf.io.gfile.listdir(output_dir):
        return True
    if tf.io.gfile.exists(output_dir) and not overwrite:
        raise FileExistsError(
            f"--output_dir {output_dir} already exists; pass --overwrite to replace it or "
            "choose another directory."
        )
    return overwrite


def write_weights(
    output_dir,
    output_format,
    config,
    arrays,
    vocab=None,
    do_lower_case=True,
    overwrite=False,
    labels=None,
    problem_type=None,
    extra_files=None,
):
    """Writes `arrays` in `output_format` (`tf1`, `keras`, `hf` or `keras_hub`) as `output_dir`.

    The whole directory is written under a temporary name and renamed when complete, so an
    interrupted conversion leaves nothing under the final name. (`tfhub` output is a SavedModel
    built by `jobs.export.tfhub`, the code that export_model.py uses.)

    Args:
        output_dir: the directory to create (or an empty one to fill).
        output_format: one of `OUTPUT_FORMATS` except `tfhub`.
        config: `BertConfig`.
        arrays: dict original name -> np.ndarray, checked by `validate`.
        vocab: vocab.txt to copy beside the weights, or None.
        do_lower_case: the tokenizer setting keras-hub presets and hf folders record.
        overwrite: replace an existing `output_dir`.
        labels: a task head's label per class id, for hf's `id2label` (None: `LABEL_i`).
        problem_type: hf: a classifier head's `problem_type` (None: regression for one output).
        extra_files: dict file name -> text, written into `output_dir` with the weights.

    Returns:
        The list of files written (under their final names).

    Raises:
        FileExistsError: `output_dir` exists, is not empty and `overwrite` is false.
    """
    overwrite = check_output_dir(output_dir, overwrite)
    parent = os.path.dirname(output_dir.rstrip("/"))
    if parent:
        tf.io.gfile.makedirs(parent)
    if output_format not in ("tf1", "hf"):
        arrays = task_heads.without(arrays, output_format)
    with atomic_directory(output_dir, overwrite=overwrite) as temp:
        tf.io.gfile.makedirs(temp)
        if output_format == "tf1":
            prefix = tf1_checkpoint.save_tf1_checkpoint(
                arrays, os.path.join(temp, "bert_model.ckpt")
            )
            written = [prefix + ".index", prefix + ".data-00000-of-00001"]
        elif output_format == "keras":
            heads = [g for g in _HEAD_GROUPS if any(n.startswith(g) for n in arrays)]
            if len(heads) == 1:
                raise ValueError(
                    f"The keras format stores a BertModel or a BertPretrainer with both heads; "
                    f"this input has only {heads[0]}*. Convert to tf1 or hf instead."
                )
            model, _ = build_keras_model(config, arrays)
            name = (
                KERAS_PRETRAINER_FILE if isinstance(model, BertPretrainer) else KERAS_ENCODER_FILE
            )
            written = [os.path.join(temp, name)]
            # The weights and HDF5's metadata (a few KiB per variable).
            size = sum(int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize for w in model.weights)
            require_free_space(temp, size + 4096 * len(model.weights), output_dir)
            model.save_weights(written[0])
        elif output_format == "hf":
            written = hf_export.write_hf(
                temp, config, arrays, labels, problem_type, do_lower_case, bool(vocab)
            )
        elif output_format == "keras_hub":
            keras_hub.write_keras_hub(temp, config, arrays, vocab, do_lower_case)
            written = [os.path.join(temp, n) for n in sorted(tf.io.gfile.listdir(temp))]
        else:
            raise ValueError(
                f"Unknown output format {output_format!r}; use one of {list(OUTPUT_FORMATS)}."
            )
        if output_format in ("tf1", "keras"):
            config.to_json_file(os.path.join(temp, "bert_config.json"))
            written.append(os.path.join(temp, "bert_config.json"))
        if vocab and output_format != "keras_hub":
            written.append(_copy_vocab(vocab, temp))
        for name, text in (extra_files or {}).items():
            written.append(os.path.join(temp, name))
            write_atomically(written[-1], text.encode("utf-8"))
    return [os.path.join(output_dir, os.path.relpath(p, temp)) for p in written]
