"""The original layout -> a Hugging Face BERT folder (`config.json` + `model.safetensors`, and
with a vocab.txt the tokenizer's `tokenizer_config.json` and `special_tokens_map.json`).

The inverse of `modeling.formats.hf_import`: `transformers` loads the folder as `BertModel` (encoder
only), `BertForPreTraining` (both pretraining heads) or the class of a fine-tuned task head
(`BertForSequenceClassification`, ...), and keras-hub's Transformers loader reads it too. The
safetensors file is written here with numpy (8-byte header length, JSON header, raw little-endian
data), so exporting needs no extra package.
"""

import json
import struct

import numpy as np

from modeling.formats import task_heads

# This project's activation names -> HF's (HF "gelu" is the exact erf form, "gelu_new" the
# original's tanh approximation).
_ACTIVATIONS = {
    "gelu": "gelu_new",
    "gelu_exact": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}
# Tensors stored [out, in] by torch.nn.Linear; the original's dense kernels are [in, out].
_TRANSPOSED = ("/kernel",)
# Safetensors pads the JSON header with spaces so the data starts 8-byte aligned.
_ALIGN = 8
# The special tokens of Google's vocabularies, by their role in transformers' BertTokenizer.
SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}


def _has_heads(arrays):
    return any(name.startswith("cls/") for name in arrays)


def hf_name(name, prefixed):
    """The HF tensor name of an original name, and whether the tensor is transposed.

    Args:
        name: original checkpoint name, e.g. `bert/encoder/layer_0/output/dense/kernel`.
        prefixed: write encoder names under `bert.` (the `BertForPreTraining` layout).

    Returns:
        (HF name, transpose).

    Raises:
        ValueError: for a name outside the encoder and the pretraining heads.
    """
    if name == "cls/predictions/output_bias":
        return "cls.predictions.bias", False
    if name.startswith("cls/seq_relationship/"):
        # The original stores this one [2, hidden], already torch's [out, in].
        leaf = {"output_weights": "weight", "output_bias": "bias"}[name.rsplit("/", 1)[1]]
        return f"cls.seq_relationship.{leaf}", False
    if name.startswith("bert/"):
        body = name[len("bert/") :]
        head = "bert." if prefixed else ""
    elif name.startswith("cls/predictions/transform/"):
        body, head = name, ""
    else:
        raise ValueError(
            f"{name} has no Hugging Face BERT equivalent: the encoder, the pretraining heads "
            "and one task head (modeling.formats.task_heads) convert."
        )
    parts = body.split("/")
    transpose = parts[-1] == "kernel"
    leaf = {"kernel": "weight", "gamma": "weight", "beta": "bias", "bias": "bias"}.get(parts[-1])
    if leaf is None:  # an embedding table
        parts.append("weight")
    else:
        parts[-1] = leaf
    dotted = ".".join(p.replace("layer_", "layer.") if p.startswith("layer_") else p for p in parts)
    return head + dotted, transpose


def hf_arrays(arrays):
    """The arrays an HF class can hold: with a task head, the encoder (without the pooler for
    the token and span classes, which have none) and that head; else all of them."""
    head = task_heads.head_in(arrays)
    if head is None:
        return arrays
    dropped = ("cls/predictions/", "cls/seq_relationship/")
    if not head.has_pooler:
        dropped += task_heads.POOLER_NAMES
    return {n: v for n, v in arrays.items() if not n.startswith(dropped)}


def original_to_hf(arrays):
    """Renames (and transposes) original arrays into HF BERT tensor names.

    Encoder-only weights get `BertModel` names; with the pretraining heads, `BertForPreTraining`
    names (`bert.` prefix); with a task head, the names of its class (`bert.` prefix, see
    `modeling.formats.task_heads`).

    Args:
        arrays: dict original name -> array, as `hf_arrays` leaves them.

    Returns:
        dict HF name -> float32 np.ndarray (C-contiguous).
    """
    head = task_heads.head_in(arrays)
    out = task_heads.to_hf(head, arrays) if head is not None else {}
    prefixed = head is not None or _has_heads(arrays)
    for name, value in arrays.items():
        if head is not None and name in head.names:
            continue
        target, transpose = hf_name(name, prefixed)
        array = np.asarray(value, dtype=np.float32)
        out[target] = np.ascontiguousarray(array.T if transpose else array)
    return out


def safetensors_bytes(tensors, metadata=None):
    """Serializes float32 arrays in the safetensors format.

    Args:
        tensors: dict name -> float32 np.ndarray.
        metadata: optional dict of strings (HF writes {"format": "pt"}).

    Returns:
        bytes of the whole file.
    """
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(tensors[name].shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % _ALIGN)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def hf_config(config, arrays, labels=None, problem_type=None):
    """The HF `config.json` dict of a `BertConfig` (`architectures` from the tensors present).

    Args:
        config: `BertConfig`.
        arrays: dict original name -> array, as `hf_arrays` leaves them.
        labels: a task head's label per class id (`id2label`), or None for HF's `LABEL_i`.
        problem_type: a classifier head's HF `problem_type` (`task_heads.hf_label_fields`).
    """
    if config.hidden_act not in _ACTIVATIONS:
        raise ValueError(
            f"hidden_act {config.hidden_act!r} has no Hugging Face equivalent; known: "
            f"{sorted(_ACTIVATIONS)}."
        )
    mlm = any(n.startswith("cls/predictions/") for n in arrays)
    nsp = any(n.startswith("cls/seq_relationship/") for n in arrays)
    architecture = {
        (False, False): "BertModel",
        (True, True): "BertForPreTraining",
        (True, False): "BertForMaskedLM",
        (False, True): "BertForNextSentencePrediction",
    }[(mlm, nsp)]
    head = task_heads.head_in(arrays)
    fields = {}
    if head is not None:
        architecture = head.hf_architecture
        fields = task_heads.hf_label_fields(
            head, task_heads.num_labels(head, arrays), labels, problem_type
        )
    return {
        **fields,
        "architectures": [architecture],
        "model_type": "bert",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": _ACTIVATIONS[config.hidden_act],
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.initializer_range,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    }


def _json_text(value):
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def tokenizer_files(do_lower_case, max_length):
    """The tokenizer files of an HF folder that holds a vocab.txt: {file name: text}.

    Without `tokenizer_config.json`, transformers' BertTokenizer lower-cases by default, so a
    cased model's text would be lower-cased silently. The settings written make its
    tokenizers (slow and fast) give the ids of `FullTokenizer(vocab, do_lower_case)`.

    Args:
        do_lower_case: the model's casing (the original lower-cases and strips accents
            together, one setting).
        max_length: the longest input the model takes (`max_position_embeddings`).
    """
    settings = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": do_lower_case,
        # Stated, not left to transformers' default (which follows do_lower_case too), so the
        # file reads as the original's rule.
        "strip_accents": do_lower_case,
        "tokenize_chinese_chars": True,
        "model_max_length": max_length,
        **SPECIAL_TOKENS,
    }
    return {
        "tokenizer_config.json": _json_text(settings),
        "special_tokens_map.json": _json_text(SPECIAL_TOKENS),
    }
