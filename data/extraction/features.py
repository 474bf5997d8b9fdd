"""extract_features.py's input lines and JSONL output, in the original's exact formats."""

import functools
import json
import re

import numpy as np
import tensorflow as tf

from data.tokenization.full_tokenizer import convert_to_unicode
from fileio.errors import UserError

# Greedy on the left, so the last " ||| " splits a line, as in the original.
_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")


def iter_examples(input_file):
    """Yields one example per line, `text_a` or `text_a ||| text_b`, as the file is read.

    Every line counts, empty ones included; `unique_id` is the 0-based line number.

    Yields:
        (unique_id, text_a, text_b or None).

    Raises:
        ValueError: if the file does not exist.
    """
    if not tf.io.gfile.exists(input_file):
        raise ValueError(f"--input_file not found: {input_file}")
    with tf.io.gfile.GFile(input_file, "rb") as reader:
        for unique_id, raw in enumerate(reader):
            yield (unique_id, *split_line(convert_to_unicode(raw).strip()))


def split_line(line):
    """(text_a, text_b) of a `text_a ||| text_b` line, (line, None) of any other."""
    match = _PAIR.match(line)
    return (match.group(1), match.group(2)) if match else (line, None)


def empty_input_error(input_file):
    """The `UserError` for an input file without a line."""
    return UserError(
        f"--input_file={input_file} is empty: write one example per line ('text_a' or "
        "'text_a ||| text_b')."
    )


# Beyond this magnitude x * 1e6 is no longer an exact float64 integer after rounding.
_EXACT_SCALED_LIMIT = 2.0**52


def _scaled_6(x):
    """`rint(x * 1e6)` for a float64 array, and where that is not Python's `round(x, 6)` * 1e6.

    Python's `round(x, 6)` is the float64 nearest to x rounded (half to even, on x's exact
    binary value) to an integer multiple k of 1e-6; `k / 1e6`, one correctly rounded division,
    is that same float64. `rint(x * 1e6)` finds k unless the product's own rounding moved it
    across a half (only when x * 1e6 lies within about 1e-7 of one); those values, non-finite
    ones and magnitudes whose k is not exact are marked unsure.

    Returns:
        (k, unsure): float64 and bool arrays of x's shape.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = x * 1e6
        # The product is within |x * 1e6| * 2**-53 of the exact one; a margin of 8 times that.
        margin = (np.abs(scaled) + 1.0) * 2.0**-50
        unsure = ~(np.abs(scaled) < _EXACT_SCALED_LIMIT) | (
            np.abs(scaled - np.floor(scaled) - 0.5) <= margin
        )
        return np.rint(scaled), unsure


def round_6(values):
    """`[round(float(v), 6) for v in row]` for every row of a float array, vectorised.

    Args:
        values: float array `[N, H]` (float32 activations).

    Returns:
        list of N lists of H Python floats.
    """
    x = np.asarray(values, np.float64)
    scaled, unsure = _scaled_6(x)
    rows = (scaled / 1e6).tolist()
    for i, j in zip(*np.nonzero(unsure), strict=True):
        rows[i][j] = round(float(x[i, j]), 6)
    return rows


# Values written here from their digits: zeros and 1e-6 <= |v| < 1e9. In that range Python's
# repr of k / 1e6 is k's decimal digits with the point 6 places from the right and trailing
# zeros dropped: any shorter decimal differs from it by at least 1e-6, more than the spacing of
# float64 values there, so it would not read back as the same float. Below 1e-4 repr writes an
# exponent: k * 1e-6 as "d[.d]e-05" or "de-06".
_DIGITS_LIMIT = 1e15
_EXPONENT_BELOW = 100  # |k| < 100: |v| < 1e-4


def _digit(values, place):
    """The ASCII code of the decimal digit at `place` (a power of ten) of int32 `values`."""
    return (values // place % 10 + ord("0")).astype(np.uint8)


@functools.cache
def _fraction_digits():
    """`[10**6]` uint64: the 6 decimals of every fraction as 8 bytes (ASCII digits, then zero
    bytes), zero bytes too for the trailing zeros repr drops (the first decimal always written)."""
    fraction = np.arange(1_000_000, dtype=np.int32)
    table = np.zeros((fraction.size, 8), np.uint8)
    for i, place in enumerate((100_000, 10_000, 1_000, 100, 10, 1)):
        written = True if i == 0 else fraction % (10 * place) != 0
        table[:, i] = np.where(written, _digit(fraction, place), 0)
    return table.view("<u8").ravel()


def value_lists(values):
    """The text json.dumps writes for `round_6(values)`: one `"v, v, ..."` per row.

    Byte for byte `json.dumps(row)[1:-1]` for each row of `round_6(values)`, built from the
    digits of all the values at once (json.dumps, which formats one float at a time, took 5 of
    the 13 seconds of a BERT-Mini extraction). Every value gets a record of characters in
    which the ones it does not write are zero bytes, dropped at the end.

    Args:
        values: float array `[N, H]`.

    Returns:
        list of N strings.
    """
    x = np.asarray(values, np.float64)
    n, h = x.shape
    if n == 0:
        return []
    k, unsure = _scaled_6(x)
    magnitude = np.abs(k)
    unsure |= ~(magnitude < _DIGITS_LIMIT)
    whole, fraction = np.divmod(np.where(unsure, 0, magnitude).astype(np.int64), 1_000_000)
    whole, fraction = whole.astype(np.int32).ravel(), fraction.astype(np.int32).ravel()
    places = len(str(int(whole.max())))
    record = np.dtype(
        [("sign", "u1"), ("whole", "u1", (places,)), ("dot", "u1"), ("decimals", "<u8")]
        + [("separator", "u1", (2,))]  # ", ", or a newline after each row's last value
    )
    values_text = np.empty(n * h, record)
    values_text["sign"] = np.signbit(k).ravel() * np.uint8(ord("-"))
    for column in range(places - 1):  # leading zeros are not written
        place = 10 ** (places - 1 - column)
        values_text["whole"][:, column] = np.where(whole >= place, _digit(whole, place), 0)
    values_text["whole"][:, -1] = _digit(whole, 1)
    values_text["dot"] = ord(".")
    values_text["decimals"] = _fraction_digits()[fraction]
    values_text["separator"] = (ord(","), ord(" "))
    values_text["separator"][h - 1 :: h] = (ord("\n"), 0)
    chars = values_text.view(np.uint8).reshape(n * h, record.itemsize)
    tiny = np.flatnonzero((fraction > 0) & (fraction < _EXPONENT_BELOW) & (whole == 0))
    if tiny.size:
        # After the sign: "d.de-05", "de-05" or "de-06" in the columns of the digits.
        f = fraction[tiny]
        two = f >= 10
        text = np.zeros((tiny.size, chars.shape[1] - 3), np.uint8)
        text[:, 0] = np.where(two, _digit(f, 10), _digit(f, 1))
        text[:, 1] = np.where(two & (f % 10 != 0), ord("."), 0)
        text[:, 2] = np.where(two & (f % 10 != 0), _digit(f, 1), 0)
        text[:, 3:7] = np.frombuffer(b"e-05", np.uint8)
        text[:, 6] = np.where(two, ord("5"), ord("6"))
        chars[tiny, 1:-2] = text
    flat = chars.ravel()
    texts = np.compress(flat != 0, flat).tobytes().decode("ascii").split("\n")[:n]
    for i in np.flatnonzero(unsure.any(axis=1)).tolist():
        texts[i] = json.dumps(round_6(x[i : i + 1])[0])[1:-1]  # NaN, Infinity as json writes
    return texts


def format_json_line(unique_id, tokens, layer_indexes, layer_values):
    """One output line, byte for byte as the original writes it (with json.dumps).

    Args:
        unique_id: the example's line number (written under the original's key `linex_index`).
        tokens: the real tokens of the example.
        layer_indexes: the requested layer indexes, in flag order.
        layer_values: list (one per index) of float arrays `[num_tokens_or_more, H]`.

    Returns:
        The JSON text without the newline.
    """
    count = len(tokens)
    # All layers' rows in one call: row j * count + i is layer j's values of token i.
    texts = value_lists(np.concatenate([values[:count] for values in layer_values]))
    features = []
    for i, token in enumerate(tokens):
        layers = ", ".join(
            f'{{"index": {index}, "values": [{texts[j * count + i]}]}}'
            for j, index in enumerate(layer_indexes)
        )
        features.append(f'{{"token": {json.dumps(token)}, "layers": [{layers}]}}')
    return f'{{"linex_index": {unique_id}, "features": [{", ".join(features)}]}}'
