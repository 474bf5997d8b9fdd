"""Hugging Face-format BERT weights (`model.safetensors` + `config.json`) -> the original layout.

The safetensors format is read here directly with numpy (an 8-byte little-endian header length,
a JSON header of name -> dtype/shape/offsets, then raw little-endian data), from any file system
TensorFlow reads, a damaged file named as such. bfloat16 tensors (numpy has no such type) are
widened to float32 on reading, which is exact: a bfloat16 is the upper half of a float32. The
tensors' names come from `modeling.formats.hf_names`.
"""

import json
import os
import struct

import numpy as np
import tensorflow as tf
from absl import logging

from fileio.errors import UserError
from modeling.config import BertConfig
from modeling.formats import task_heads
from modeling.formats.hf_names import FROM_HF_ACTIVATION, hf_to_original_names

_SAFETENSORS_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
# Read as its 16 raw bits, then widened (see `_bfloat16_to_float32`).
_BFLOAT16 = "BF16"


def _bfloat16_to_float32(raw):
    """float32 values of bfloat16 bit patterns.

    Args:
        raw: uint16 array of any shape, the bfloat16 bits (sign, 8 exponent, 7 mantissa bits).

    Returns:
        float32 array of the same shape: the bits as the upper half of a float32, the lower
        half zero, so every value (infinities and NaNs too) is kept exactly.
    """
    return (raw.astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path):
    """Reads a `.safetensors` file into numpy arrays.

    Args:
        path: file path.

    Returns:
        dict tensor name -> np.ndarray (copies, native byte order); BF16 tensors as float32.

    Raises:
        ValueError: if the file is missing, truncated or not safetensors.
    """
    if not tf.io.gfile.exists(path):
        raise ValueError(f"safetensors file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        blob = f.read()

    def damaged(what):
        return UserError(
            f"{path} is damaged or truncated ({what}): download it again, or re-save the model "
            "with safe_serialization=True."
        )

    if len(blob) < 8:
        raise damaged(f"only {len(blob)} bytes, not a safetensors file")
    (header_len,) = struct.unpack("<Q", blob[:8])
    if 8 + header_len > len(blob):
        raise damaged(f"its header says {header_len} bytes but the file has {len(blob)}")
    try:
        header = json.loads(blob[8 : 8 + header_len])
    except ValueError:
        raise damaged("its header is not JSON") from None
    if not isinstance(header, dict):
        raise damaged("its header is not a JSON object")
    data = memoryview(blob)[8 + header_len :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            kind, shape, (start, end) = info["dtype"], info["shape"], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise damaged(f"the header entry of {name} is malformed") from None
        bfloat16 = kind == _BFLOAT16
        if kind not in _SAFETENSORS_DTYPES and not bfloat16:
            raise ValueError(
                f"{path}: tensor {name} has unsupported dtype {kind}; save the model "
                "in float32, float16 or bfloat16."
            )
        dtype = np.dtype(np.uint16 if bfloat16 else _SAFETENSORS_DTYPES[kind]).newbyteorder("<")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(data)):
            raise damaged(f"tensor {name} ends at byte {end} of {len(data)} bytes of data")
        try:
            array = np.frombuffer(data[start:end], dtype=dtype).reshape(shape)
        except (ValueError, TypeError):
            raise damaged(
                f"tensor {name} has {end - start} bytes, not the {shape} it claims"
            ) from None
        array = array.astype(dtype.newbyteorder("="))
        tensors[name] = _bfloat16_to_float32(array) if bfloat16 else array
    return tensors


def config_from_hf(hf_config):
    """Builds a `BertConfig` from an HF `config.json` dict.

    Raises:
        ValueError: for a non-BERT model type, an unknown activation or a LayerNorm epsilon
            other than the original's 1e-12.
    """
    model_type = hf_config.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(f"config.json: model_type is {model_type!r}; only 'bert' is supported.")
    act = hf_config.get("hidden_act", "gelu")
    if act not in FROM_HF_ACTIVATION:
        raise ValueError(
            f"config.json: hidden_act {act!r} has no equivalent here; known: "
            f"{sorted(FROM_HF_ACTIVATION)}."
        )
    eps = hf_config.get("layer_norm_eps", 1e-12)
    if abs(eps - 1e-12) > 1e-15:
        raise ValueError(
            f"config.json: layer_norm_eps is {eps}; the original BERT (and this project) uses "
            "1e-12, so outputs would differ."
        )
    return BertConfig(
        vocab_size=hf_config["vocab_size"],
        hidden_size=hf_config.get("hidden_size", 768),
        num_hidden_layers=hf_config.get("num_hidden_layers", 12),
        num_attention_heads=hf_config.get("num_attention_heads", 12),
        intermediate_size=hf_config.get("intermediate_size", 3072),
        hidden_act=FROM_HF_ACTIVATION[act],
        hidden_dropout_prob=hf_config.get("hidden_dropout_prob", 0.1),
        attention_probs_dropout_prob=hf_config.get("attention_probs_dropout_prob", 0.1),
        max_position_embeddings=hf_config.get("max_position_embeddings", 512),
        type_vocab_size=hf_config.get("type_vocab_size", 2),
        initializer_range=hf_config.get("initializer_range", 0.02),
    )


def read_hf_config(model_dir):
    """The dict of `model_dir/config.json`.

    Raises:
        UserError: for a file that is not JSON or holds no `vocab_size`.
    """
    config_path = os.path.join(model_dir, "config.json")
    with tf.io.gfile.GFile(config_path, "rb") as f:
        raw = f.read()
    fix = "download the model's config.json again"
    try:
        hf_config = json.loads(raw)
    except ValueError as err:
        raise UserError(f"{config_path} is not valid JSON ({err}); if damaged, {fix}.") from None
    if not isinstance(hf_config, dict) or "vocab_size" not in hf_config:
        raise UserError(f'{config_path} holds no "vocab_size" (damaged or truncated?): {fix}.')
    return hf_config


def load_hf_model(model_dir):
    """Reads an HF BERT folder: `config.json` + `model.safetensors` (+ `vocab.txt`).

    A fine-tuned model's task head comes with it under its original names (see
    `modeling.formats.task_heads`); its labels stay in `config.json` (`read_hf_config`,
    `task_heads.hf_labels`).

    Args:
        model_dir: the folder.

    Returns:
        (BertConfig, dict original name -> np.ndarray, vocab path or None).

    Raises:
        ValueError: naming the missing file or the bad content.
    """
    config_path = os.path.join(model_dir, "config.json")
    weights_path = os.path.join(model_dir, "model.safetensors")
    for p in (config_path, weights_path):
        if not tf.io.gfile.exists(p):
            raise ValueError(
                f"{p} not found: an HF BERT folder needs config.json and model.safetensors "
                "(pytorch_model.bin is not supported; re-save with safe_serialization=True)."
            )
    hf_config = read_hf_config(model_dir)
    config = config_from_hf(hf_config)
    tensors = read_safetensors(weights_path)
    head = task_heads.hf_head_of(hf_config, tensors)
    arrays = hf_to_original_names(tensors, head)
    if head is not None and not head.has_pooler and task_heads.POOLER_NAMES[0] not in arrays:
        # HF's token and span classes have no pooler; this project's BertModel always has one.
        # The task never reads the pooled output, so zeros change no answer.
        width = config.hidden_size
        kernel, bias = task_heads.POOLER_NAMES
        arrays[kernel] = np.zeros((width, width), np.float32)
        arrays[bias] = np.zeros((width,), np.float32)
        logging.info(
            "%s has no pooler (%s does not use one): written as zeros.",
            model_dir,
            head.hf_architecture,
        )
    vocab = os.path.join(model_dir, "vocab.txt")
    return config, arrays, (vocab if tf.io.gfile.exists(vocab) else None)
