"""extract_features.py's input lines and JSONL output, in the original's exact formats."""

import json
import re

import tensorflow as tf

from data.tokenization.full_tokenizer import convert_to_unicode
from data.tokenization.packing import log_features, pack_tokens

# Greedy on the left, so the last " ||| " splits a line, as in the original.
_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")


def read_examples(input_file):
    """Reads one example per line: `text_a` or `text_a ||| text_b`.

    Every line counts, empty ones included; `unique_id` is the 0-based line number.

    Returns:
        list of (unique_id, text_a, text_b or None).

    Raises:
        ValueError: if the file does not exist.
    """
    if not tf.io.gfile.exists(input_file):
        raise ValueError(f"--input_file not found: {input_file}")
    examples = []
    with tf.io.gfile.GFile(input_file, "rb") as reader:
        for unique_id, raw in enumerate(reader):
            line = convert_to_unicode(raw).strip()
            match = _PAIR.match(line)
            if match:
                examples.append((unique_id, match.group(1), match.group(2)))
            else:
                examples.append((unique_id, line, None))
    return examples


def convert_examples_to_features(examples, max_seq_length, tokenizer, num_logged=5):
    """Tokenizes and packs examples (pairs truncated to max_seq_length - 3).

    Returns:
        list of `data.tokenization.packing.InputFeatures`.
    """
    features = []
    for index, (unique_id, text_a, text_b) in enumerate(examples):
        tokens_a = tokenizer.tokenize(text_a)
        tokens_b = tokenizer.tokenize(text_b) if text_b else None
        feature = pack_tokens(
            tokens_a, tokens_b, max_seq_length, tokenizer.convert_tokens_to_ids, unique_id
        )
        if index < num_logged:
            log_features(feature, segment_key="input_type_ids")
        features.append(feature)
    return features


def format_json_line(unique_id, tokens, layer_indexes, layer_values):
    """One output line, byte for byte as the original writes it.

    Args:
        unique_id: the example's line number (written under the original's key `linex_index`).
        tokens: the real tokens of the example.
        layer_indexes: the requested layer indexes, in flag order.
        layer_values: list (one per index) of float arrays `[num_tokens_or_more, H]`.

    Returns:
        The JSON text without the newline.
    """
    features = []
    for i, token in enumerate(tokens):
        layers = [
            {"index": index, "values": [round(v, 6) for v in values[i].tolist()]}
            for index, values in zip(layer_indexes, layer_values, strict=True)
        ]
        features.append({"token": token, "layers": layers})
    return json.dumps({"linex_index": unique_id, "features": features})
