"""Character classes and cached text normalisation behind `tokenization.BasicTokenizer`.

Each character class matches the original release exactly; speed comes from caching only:
lazily filled `str.translate` tables per code point and memoised per-word splits, both bounded.
"""

import functools
import unicodedata

# Ranges of the CJK Unified Ideographs blocks (and their extensions and
# compatibility forms) that get spaces around them. Hangul, Hiragana and
# Katakana are deliberately absent: those scripts separate words with spaces.
# fmt: off
_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)
# fmt: on

# Upper bound on cached code points per table, so adversarial input cannot make
# the caches grow to the whole of Unicode.
_MAX_CACHED_CHARS = 1 << 18
_MAX_CACHED_WORDS = 1 << 16


def _is_whitespace(char):
    """Returns whether `char` counts as whitespace (space, \\t, \\n, \\r or `Zs`)."""
    # \t, \n and \r are category Cc, but text treats them as spaces.
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    """Returns whether `char` is removed as a control/format character (`Cc`, `Cf`)."""
    if char in ("\t", "\n", "\r"):
        return False
    # Only Cc and Cf: "C*" would also delete unassigned (Cn), private-use (Co)
    # and surrogate (Cs) code points, e.g. emoji newer than the Unicode database.
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    """Returns whether `char` is split off as punctuation.

    Every printable non-alphanumeric ASCII character counts (so "$", "+", "^",
    "`" too, though Unicode files them as symbols), plus every Unicode `P*`.
    """
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    """Returns whether code point `cp` (int) lies in one of `_CJK_RANGES`."""
    return any(low <= cp <= high for low, high in _CJK_RANGES)


class _TranslationTable(dict):
    """`str.translate` table from code point to replacement, filled on first use."""

    def __init__(self, clean, space_cjk):
        super().__init__()
        self._clean = clean
        self._space_cjk = space_cjk

    def __missing__(self, cp):
        char = chr(cp)
        value = char
        if self._clean and (cp == 0 or cp == 0xFFFD or _is_control(char)):
            value = ""
        elif self._clean and _is_whitespace(char):
            value = " "
        elif self._space_cjk and _is_chinese_char(cp):
            value = f" {char} "
        if len(self) < _MAX_CACHED_CHARS:
            self[cp] = value
        return value


_CLEAN = _TranslationTable(clean=True, space_cjk=False)
_SPACE_CJK = _TranslationTable(clean=False, space_cjk=True)
# One pass does both steps: no character removed or turned into a space by
# cleaning lies in a CJK range, so the order of the two steps cannot matter.
_CLEAN_AND_SPACE_CJK = _TranslationTable(clean=True, space_cjk=True)


@functools.lru_cache(maxsize=_MAX_CACHED_CHARS)
def _is_mark_nonspacing(char):
    return unicodedata.category(char) == "Mn"


@functools.lru_cache(maxsize=_MAX_CACHED_CHARS)
def _is_punctuation_cached(char):
    return _is_punctuation(char)


def _strip_accents(text):
    """Returns `text` in NFD with every `Mn` character removed."""
    if text.isascii():
        # ASCII is already NFD and holds no combining marks.
        return text
    text = unicodedata.normalize("NFD", text)
    return "".join(char for char in text if not _is_mark_nonspacing(char))


def _split_on_punctuation(text):
    """Returns maximal runs of non-punctuation and each punctuation char alone."""
    pieces = []
    start = 0
    for i, char in enumerate(text):
        if _is_punctuation_cached(char):
            if i > start:
                pieces.append(text[start:i])
            pieces.append(char)
            start = i + 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces


@functools.lru_cache(maxsize=_MAX_CACHED_WORDS)
def _split_word(word, do_lower_case):
    """Returns the basic tokens (tuple) of one whitespace-free word."""
    if do_lower_case:
        word = _strip_accents(word.lower())
    # Lower-casing and NFD could in principle produce whitespace; the original
    # re-splits the joined tokens on whitespace, which this split reproduces.
    return tuple(token for piece in _split_on_punctuation(word) for token in piece.split())
