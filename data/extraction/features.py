"""extract_features.py's input lines and JSONL output, in the original's exact formats."""

import json
import re

import numpy as np
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


# Beyond this magnitude x * 1e6 is no longer an exact float64 integer after rounding.
_EXACT_SCALED_LIMIT = 2.0**52


def round_6(values):
    """`[round(float(v), 6) for v in row]` for every row of a float array, vectorised.

    Python's `round(x, 6)` is the float64 nearest to x rounded (half to even, on x's exact
    binary value) to an integer multiple k of 1e-6; `k / 1e6`, one correctly rounded division,
    is that same float64. `rint(x * 1e6)` finds k unless the product's own rounding moved it
    across a half (only when x * 1e6 lies within about 1e-7 of one); those values, non-finite
    ones and magnitudes whose k is not exact take Python's `round` itself.

    Args:
        values: float array `[N, H]` (float32 activations).

    Returns:
        list of N lists of H Python floats.
    """
    x = np.asarray(values, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = x * 1e6
        rounded = np.rint(scaled) / 1e6
        # The product is within |x * 1e6| * 2**-53 of the exact one; a margin of 8 times that.
        margin = (np.abs(scaled) + 1.0) * 2.0**-50
        unsure = ~(np.abs(scaled) < _EXACT_SCALED_LIMIT) | (
            np.abs(scaled - np.floor(scaled) - 0.5) <= margin
        )
    rows = rounded.tolist()
    for i, j in zip(*np.nonzero(unsure), strict=True):
        rows[i][j] = round(float(x[i, j]), 6)
    return rows


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
    count = len(tokens)
    rounded = [round_6(values[:count]) for values in layer_values]
    features = []
    for i, token in enumerate(tokens):
        layers = [
            {"index": index, "values": rows[i]}
            for index, rows in zip(layer_indexes, rounded, strict=True)
        ]
        features.append({"token": token, "layers": layers})
    return json.dumps({"linex_index": unique_id, "features": features})
