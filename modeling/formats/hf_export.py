"""The original layout -> a Hugging Face BERT folder (`config.json` + `model.safetensors`, and
with a vocab.txt the tokenizer's `tokenizer_config.json` and `special_tokens_map.json`).

The inverse of `modeling.formats.hf_import`: `transformers` loads the folder as `BertModel` (encoder
only), `BertForPreTraining` (both pretraining heads) or the class of a fine-tuned task head
(`BertForSequenceClassification`, ...), and keras-hub's Transformers loader reads it too. The
tensors' names come from `modeling.formats.hf_names`; `modeling.formats.conversion` writes them.
"""

import json
import os

from absl import logging

from fileio.atomic import write_atomically, write_safetensors
from modeling.formats import hf_names, task_heads

# The special tokens of Google's vocabularies, by their role in transformers' BertTokenizer.
SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}


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


def hf_config(config, arrays, labels=None, problem_type=None):
    """The HF `config.json` dict of a `BertConfig` (`architectures` from the tensors present).

    Args:
        config: `BertConfig`.
        arrays: dict original name -> array, as `hf_arrays` leaves them.
        labels: a task head's label per class id (`id2label`), or None for HF's `LABEL_i`.
        problem_type: a classifier head's HF `problem_type` (`task_heads.hf_label_fields`).
    """
    if config.hidden_act not in hf_names.TO_HF_ACTIVATION:
        raise ValueError(
            f"hidden_act {config.hidden_act!r} has no Hugging Face equivalent; known: "
            f"{sorted(hf_names.TO_HF_ACTIVATION)}."
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
        "hidden_act": hf_names.TO_HF_ACTIVATION[config.hidden_act],
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


def write_hf(directory, config, arrays, labels=None, problem_type=None, do_lower_case=True,
             with_tokenizer=False):  # fmt: skip
    """Writes `model.safetensors` and `config.json` (and with `with_tokenizer`, a vocab.txt
    being copied beside them, the tokenizer's files) into `directory`.

    Args:
        directory: an existing folder (the conversion's temporary one).
        config: `BertConfig`.
        arrays: dict original name -> array; tensors the HF class cannot hold are left out,
            with a warning.
        labels, problem_type: a task head's classes and HF `problem_type` (`hf_config`).
        do_lower_case: the tokenizer's casing.
        with_tokenizer: write `tokenizer_config.json` and `special_tokens_map.json`.

    Returns:
        The files written.
    """
    kept = hf_arrays(arrays)
    left_out = sorted(set(arrays) - set(kept))
    if left_out:
        logging.warning(
            "Left out of the Hugging Face folder (%s holds no such tensors): %s",
            hf_config(config, kept)["architectures"][0],
            ", ".join(left_out),
        )
    weights = os.path.join(directory, "model.safetensors")
    # transformers refuses a file without a "format" and reads "pt" as torch's names and layout.
    write_safetensors(weights, hf_names.original_to_hf(kept), metadata={"format": "pt"})
    files = {"config.json": _json_text(hf_config(config, kept, labels, problem_type))}
    if with_tokenizer:
        files.update(tokenizer_files(do_lower_case, config.max_position_embeddings))
    else:
        logging.warning(
            "No vocab.txt came with the input: the Hugging Face folder has no tokenizer."
        )
    written = [weights]
    for name, text in files.items():
        written.append(os.path.join(directory, name))
        write_atomically(written[-1], text.encode("utf-8"))
    return written
