"""The per-code-point tables the in-graph BasicTokenizer (`fast_tokenizer.FastFullTokenizer`)
reads: each code point's class flags (dropped by cleaning, a space, CJK, punctuation, a mark,
the final-sigma context, the canonical combining class) and its lower-cased NFD form, computed
from this interpreter's `unicodedata` and `str.lower` as `full_tokenizer.BasicTokenizer` sees
them. TensorFlow-free.
"""

import functools
import unicodedata

import numpy as np

from data.tokenization import text_normalization

NUM_CODE_POINTS = 0x110000

# Bit flags of the per-code-point class table.
DROP = 1  # deleted by cleaning: NUL, U+FFFD, Cc/Cf other than \t \n \r
SPACE = 2  # separates words (turned into " " by cleaning, or split on by str.split)
CJK = 4  # a word of its own
PUNCT = 8  # a token of its own
MARK = 16  # category Mn: deleted after NFD when lower-casing
SIGMA_SKIP = 32  # case-ignorable: skipped when reading the context of a capital sigma
SIGMA_CASED = 64  # cased and not case-ignorable
CCC_SHIFT = 8  # canonical combining class, bits 8-15
# Lower-casing reads NFD(c.lower()) minus its Mn marks. Without COMPLEX that is its
# first code point (cp + the delta in bits 32-63, which is punctuation if LOWER_PUNCT)
# or, if VANISH, nothing; COMPLEX means canonical reordering could move a survivor,
# or more than the first code point survives.
COMPLEX = 128
VANISH = 1 << 16
LOWER_PUNCT = 1 << 17
DELTA_SHIFT = 32
NO_DELTA = (1 << DELTA_SHIFT) - 1


def class_bits(cp):
    """Returns the class flags (without the combining class) of code point `cp`."""
    char = chr(cp)
    bits = 0
    if cp in (0, 0xFFFD) or text_normalization._is_control(char):
        return DROP
    # str.split in whitespace_tokenize also splits on a few characters that
    # cleaning keeps (U+2028, U+2029).
    if text_normalization._is_whitespace(char) or char.isspace():
        bits |= SPACE
    if text_normalization._is_chinese_char(cp):
        bits |= CJK
    if text_normalization._is_punctuation(char):
        bits |= PUNCT
    if unicodedata.category(char) == "Mn":
        bits |= MARK
    # str.lower() turns a capital sigma into a final sigma when the nearest
    # character before it that is not case-ignorable is cased, and no cased
    # one follows it. Probing str.lower() itself yields exactly the two
    # classes that rule reads (CPython exposes them no other way).
    cased_alone = (char + "\u03a3").lower()[-1] == "\u03c2"
    cased_or_skipped = ("A" + char + "\u03a3").lower()[-1] == "\u03c2"
    if cased_alone:
        bits |= SIGMA_CASED
    elif cased_or_skipped:
        bits |= SIGMA_SKIP
    return bits | unicodedata.combining(char) << CCC_SHIFT


@functools.cache
def unicode_tables():
    """Per-code-point tables of this interpreter's Unicode data (about 1 s, then cached).

    Returns:
      A dict of numpy arrays:
        `class_starts` int32 [R], `class_bits` int64 [R]: code points `class_starts[i]`
          up to the next start all have the flags `class_bits[i]`;
        `lower_keys` [M] (sorted), `lower_splits` [M + 1], `lower_values`, int32: the code
          points whose `unicodedata.normalize("NFD", chr(cp).lower())` differs from
          `chr(cp)`, and that string's code points.
    """
    bits = np.zeros(NUM_CODE_POINTS, np.int64)
    keys, splits, values = [], [0], []
    for cp in range(NUM_CODE_POINTS):
        if unicodedata.category(chr(cp)) in ("Cn", "Co", "Cs"):
            # Unassigned, private-use and surrogate code points have no
            # properties, but the CJK ranges include unassigned ones.
            bits[cp] = CJK if text_normalization._is_chinese_char(cp) else 0
            continue
        mapped = unicodedata.normalize("NFD", chr(cp).lower())
        marks = [unicodedata.category(c) == "Mn" for c in mapped]
        movable = any(
            unicodedata.combining(c) and not m for c, m in zip(mapped, marks, strict=True)
        )
        flags = class_bits(cp) | (VANISH if marks[0] else 0)
        flags |= COMPLEX if movable or not all(marks[1:]) else 0
        flags |= LOWER_PUNCT if text_normalization._is_punctuation(mapped[0]) else 0
        # The delta of a COMPLEX code point is never read; 0 keeps the table short.
        delta = 0 if flags & COMPLEX else ord(mapped[0]) - cp
        bits[cp] = flags | delta << DELTA_SHIFT
        if mapped != chr(cp):
            keys.append(cp)
            values.extend(ord(c) for c in mapped)
            splits.append(len(values))
    starts = np.concatenate([[0], np.flatnonzero(np.diff(bits)) + 1]).astype(np.int32)
    return {
        "class_starts": starts,
        "class_bits": bits[starts],
        "lower_keys": np.array(keys, np.int32),
        "lower_splits": np.array(splits, np.int32),
        "lower_values": np.array(values, np.int32),
    }
