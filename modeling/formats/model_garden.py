"""Model Garden (tensorflow/models, `official.nlp`) BERT weights -> the original layout.

Model Garden keeps BERT in two layouts, both read here:

* Object-based TF2 checkpoints (`tf.train.Checkpoint(encoder=BertEncoder)`, older ones
  `model=...`; a pretrainer adds `masked_lm`), as written by its TF1 converter and its training.
  Keys name objects, not variables: `encoder/layer_with_weights-N/...`, numbered in the encoder's
  build order (word, position, type embeddings, embedding LayerNorm, the transformer blocks,
  the pooler).
* TF Hub SavedModels from its exporter, whose variables carry Keras 2 names
  (`transformer/layer_0/self_attention/query/kernel`, ...).

Attention kernels are stored per head there ([hidden, heads, head_size], the output projection
[heads, head_size, hidden]); the original flattens them to [hidden, hidden].
"""

import re

import numpy as np

from modeling.checkpoint_files import open_checkpoint, resolve_checkpoint_path

_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"

# How a per-head tensor becomes the original's 2-D (or 1-D) one (keras-hub stores them alike).
KEEP, HEADS_IN, HEADS_FLAT, HEADS_OUT = "keep", "in", "flat", "out"

# Inside one transformer block of a BertEncoder object checkpoint.
_BLOCK_OBJECTS = {
    "_attention_layer/_query_dense/kernel": ("attention/self/query/kernel", HEADS_IN),
    "_attention_layer/_query_dense/bias": ("attention/self/query/bias", HEADS_FLAT),
    "_attention_layer/_key_dense/kernel": ("attention/self/key/kernel", HEADS_IN),
    "_attention_layer/_key_dense/bias": ("attention/self/key/bias", HEADS_FLAT),
    "_attention_layer/_value_dense/kernel": ("attention/self/value/kernel", HEADS_IN),
    "_attention_layer/_value_dense/bias": ("attention/self/value/bias", HEADS_FLAT),
    "_attention_layer/_output_dense/kernel": ("attention/output/dense/kernel", HEADS_OUT),
    "_attention_layer/_output_dense/bias": ("attention/output/dense/bias", KEEP),
    "_attention_layer_norm/gamma": ("attention/output/LayerNorm/gamma", KEEP),
    "_attention_layer_norm/beta": ("attention/output/LayerNorm/beta", KEEP),
    "_intermediate_dense/kernel": ("intermediate/dense/kernel", KEEP),
    "_intermediate_dense/bias": ("intermediate/dense/bias", KEEP),
    "_output_dense/kernel": ("output/dense/kernel", KEEP),
    "_output_dense/bias": ("output/dense/bias", KEEP),
    "_output_layer_norm/gamma": ("output/LayerNorm/gamma", KEEP),
    "_output_layer_norm/beta": ("output/LayerNorm/beta", KEEP),
}
_EMBEDDING_OBJECTS = {
    (0, "embeddings"): "bert/embeddings/word_embeddings",
    (1, "embeddings"): "bert/embeddings/position_embeddings",
    (2, "embeddings"): "bert/embeddings/token_type_embeddings",
    (3, "gamma"): "bert/embeddings/LayerNorm/gamma",
    (3, "beta"): "bert/embeddings/LayerNorm/beta",
}
_MASKED_LM_OBJECTS = {
    "masked_lm/dense/kernel": "cls/predictions/transform/dense/kernel",
    "masked_lm/dense/bias": "cls/predictions/transform/dense/bias",
    "masked_lm/layer_norm/gamma": "cls/predictions/transform/LayerNorm/gamma",
    "masked_lm/layer_norm/beta": "cls/predictions/transform/LayerNorm/beta",
    "masked_lm/output_bias.Sbias": "cls/predictions/output_bias",
}

# SavedModel variable names of Model Garden's exporter (Keras 2 layer names).
_VARIABLE_RULES = [
    (r"word_embeddings/embeddings", "bert/embeddings/word_embeddings", KEEP),
    (r"position_embedding/embeddings", "bert/embeddings/position_embeddings", KEEP),
    (r"type_embeddings/embeddings", "bert/embeddings/token_type_embeddings", KEEP),
    (r"embeddings/layer_norm/(gamma|beta)", "bert/embeddings/LayerNorm/{0}", KEEP),
    (
        r"transformer/layer_(\d+)/self_attention/(query|key|value)/kernel",
        "bert/encoder/layer_{0}/attention/self/{1}/kernel",
        HEADS_IN,
    ),
    (
        r"transformer/layer_(\d+)/self_attention/(query|key|value)/bias",
        "bert/encoder/layer_{0}/attention/self/{1}/bias",
        HEADS_FLAT,
    ),
    (
        r"transformer/layer_(\d+)/self_attention/attention_output/kernel",
        "bert/encoder/layer_{0}/attention/output/dense/kernel",
        HEADS_OUT,
    ),
    (
        r"transformer/layer_(\d+)/self_attention/attention_output/bias",
        "bert/encoder/layer_{0}/attention/output/dense/bias",
        KEEP,
    ),
    (
        r"transformer/layer_(\d+)/self_attention_layer_norm/(gamma|beta)",
        "bert/encoder/layer_{0}/attention/output/LayerNorm/{1}",
        KEEP,
    ),
    (
        r"transformer/layer_(\d+)/(intermediate|output)/(kernel|bias)",
        "bert/encoder/layer_{0}/{1}/dense/{2}",
        KEEP,
    ),
    (
        r"transformer/layer_(\d+)/output_layer_norm/(gamma|beta)",
        "bert/encoder/layer_{0}/output/LayerNorm/{1}",
        KEEP,
    ),
    (r"pooler_transform/(kernel|bias)", "bert/pooler/dense/{0}", KEEP),
    (r"(?:bert/)?cls/predictions/output_bias/bias", "cls/predictions/output_bias", KEEP),
    (
        r"(?:bert/)?cls/predictions/transform/(dense|LayerNorm)/(kernel|bias|gamma|beta)",
        "cls/predictions/transform/{0}/{1}",
        KEEP,
    ),
]


def to_original(array, how):
    """float32 copy of `array` with per-head axes merged as `how` says.

    Args:
        array: [hidden, heads, head_size] (HEADS_IN), [heads, head_size] (HEADS_FLAT),
            [heads, head_size, hidden] (HEADS_OUT), or any shape (KEEP).
        how: one of KEEP, HEADS_IN, HEADS_FLAT, HEADS_OUT.

    Returns:
        C-contiguous float32 np.ndarray: [hidden, hidden], [hidden] or the input shape.
    """
    array = np.asarray(array, dtype=np.float32)
    if how == HEADS_IN:
        array = array.reshape(array.shape[0], -1)
    elif how == HEADS_FLAT:
        array = array.reshape(-1)
    elif how == HEADS_OUT:
        array = array.reshape(-1, array.shape[-1])
    return np.ascontiguousarray(array)


def _encoder_prefix(keys, path):
    """The object path of the encoder (`encoder` or, in older checkpoints, `model`)."""
    # The position table: a pretrainer checkpoint may keep the word table under masked_lm.
    for prefix in ("encoder", "model"):
        if f"{prefix}/layer_with_weights-1/embeddings" in keys:
            return prefix
    tops = sorted({k.split("/")[0] for k in keys})
    raise ValueError(
        f"{path} is an object-based checkpoint without a Model Garden BERT encoder: no "
        "'encoder/layer_with_weights-1/embeddings' (or 'model/...'); its top-level objects are "
        f"{tops}. A fine-tuned model (e.g. a BertClassifier) nests the encoder inside the task "
        "model; convert the pre-trained encoder or pretrainer checkpoint instead "
        "(tf.train.Checkpoint(encoder=...), as Model Garden's tf2_bert_encoder_checkpoint_"
        "converter writes it)."
    )


def read_tf2_checkpoint(path):
    """Reads a Model Garden object-based BERT checkpoint into original names.

    Args:
        path: checkpoint prefix (`.../ckpt-1`) or a directory (its latest checkpoint).

    Returns:
        dict original name -> float32 np.ndarray: the encoder and, for a pretrainer checkpoint,
        the masked-LM head (Model Garden's pretrainer checkpoints hold no NSP head).

    Raises:
        ValueError: for a missing checkpoint, a checkpoint without an encoder, or one listing
            every object the mapping does not know.
    """
    prefix = resolve_checkpoint_path(path)
    reader = open_checkpoint(prefix)
    keys = {k[: -len(_SUFFIX)] for k in reader.get_variable_to_shape_map() if k.endswith(_SUFFIX)}
    encoder = _encoder_prefix(keys, prefix)
    pattern = re.compile(rf"{encoder}/layer_with_weights-(\d+)/(.+)")
    by_index = {}
    for key in keys:
        match = pattern.fullmatch(key)
        if match:
            by_index.setdefault(int(match.group(1)), {})[match.group(2)] = key
    blocks = sorted(
        i for i, names in by_index.items() if any("_attention_layer/" in n for n in names)
    )
    pooler = max(by_index)
    arrays, used = {}, set()

    def take(key, name, how=KEEP):
        arrays[name] = to_original(reader.get_tensor(key + _SUFFIX), how)
        used.add(key)

    for (index, attribute), name in _EMBEDDING_OBJECTS.items():
        key = by_index.get(index, {}).get(attribute)
        if key:
            take(key, name)
    for layer, index in enumerate(blocks):
        for attribute, key in by_index[index].items():
            if attribute in _BLOCK_OBJECTS:
                target, how = _BLOCK_OBJECTS[attribute]
                take(key, f"bert/encoder/layer_{layer}/{target}", how)
    if pooler not in blocks and pooler > 3:
        for attribute in ("kernel", "bias"):
            if attribute in by_index[pooler]:
                take(by_index[pooler][attribute], f"bert/pooler/dense/{attribute}")
    for key, name in _MASKED_LM_OBJECTS.items():
        if key in keys:
            take(key, name)
    table = "masked_lm/embedding_table"
    if table in keys:
        # The MLM head shares the word embeddings; a pretrainer checkpoint may store the table
        # only here.
        word = arrays.setdefault(
            "bert/embeddings/word_embeddings",
            to_original(reader.get_tensor(table + _SUFFIX), KEEP),
        )
        if not np.array_equal(word, reader.get_tensor(table + _SUFFIX)):
            raise ValueError(f"{prefix}: masked_lm/embedding_table differs from the encoder's.")
        used.add(table)
    unknown = sorted(k for k in keys - used if k != "save_counter")
    if unknown:
        raise ValueError(
            f"{prefix} holds objects with no original BERT equivalent (an embedding projection, "
            "extra heads or another encoder class):\n"
            + "\n".join(f"  {k} {reader.get_variable_to_shape_map()[k + _SUFFIX]}" for k in unknown)
        )
    return arrays


def model_garden_variables_to_original(variables):
    """Renames the variables of a Model Garden TF Hub SavedModel into original names.

    Args:
        variables: dict variable name (without `:0`) -> np.ndarray.

    Returns:
        dict original name -> float32 np.ndarray.

    Raises:
        ValueError: listing every variable the mapping does not know.
    """
    arrays, unknown = {}, []
    for name, value in variables.items():
        for pattern, template, how in _VARIABLE_RULES:
            match = re.fullmatch(pattern, name)
            if match:
                arrays[template.format(*match.groups())] = to_original(value, how)
                break
        else:
            unknown.append(f"  {name} {list(np.shape(value))}")
    if unknown:
        raise ValueError(
            "SavedModel variables with no original BERT equivalent:\n" + "\n".join(unknown)
        )
    return arrays
