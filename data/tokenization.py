"""WordPiece tokenization with the exact behaviour of the original BERT release.

`BasicTokenizer` cleans the text, spaces out CJK ideographs, optionally
lower-cases and strips accents, and splits off punctuation; `WordpieceTokenizer`
then splits each word greedily into the longest vocabulary pieces. The output is
identical to the original for every input; the speed comes from caching only
(lazily filled `str.translate` tables per character, memoised words).

Example:
  tokenizer = FullTokenizer("uncased_L-12_H-768_A-12/vocab.txt", do_lower_case=True)
  tokenizer.tokenize("UNwant\u00e9d,running")
  # -> ["un", "##want", "##ed", ",", "runn", "##ing"] with the test vocabulary.
"""

import collections
import functools
import re
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

# Released checkpoints whose directory name reveals their casing.
_LOWERCASED_MODELS = frozenset(
    "uncased_L-24_H-1024_A-16 uncased_L-12_H-768_A-12 multilingual_L-12_H-768_A-12 "
    "chinese_L-12_H-768_A-12".split()
)
_CASED_MODELS = frozenset(
    "cased_L-12_H-768_A-12 cased_L-24_H-1024_A-16 multi_cased_L-12_H-768_A-12".split()
)

# The dot before "ckpt" is unescaped and the match is anchored at the start
# only, as in the original, so "…/bert_model.ckpt-123" is recognised too.
_CHECKPOINT_NAME_RE = re.compile(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt")

# Upper bound on cached code points per table, so adversarial input cannot make
# the caches grow to the whole of Unicode.
_MAX_CACHED_CHARS = 1 << 18
_MAX_CACHED_WORDS = 1 << 16


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Checks that `do_lower_case` fits the casing of a released checkpoint.

    The casing is not stored in `bert_config.json`, so it is guessed from the
    name of the directory holding `bert_model.ckpt`. Unknown names are accepted.

    Args:
      do_lower_case: Whether the input will be lower-cased.
      init_checkpoint: Path of the checkpoint to fine-tune from, or None/"".

    Raises:
      ValueError: If the checkpoint is a known lower-cased model and
        `do_lower_case` is false, or a known cased model and it is true.
    """
    if not init_checkpoint:
        return
    match = _CHECKPOINT_NAME_RE.match(init_checkpoint)
    if match is None:
        return
    model_name = match.group(1)
    if model_name in _LOWERCASED_MODELS and not do_lower_case:
        actual_flag, case_name, opposite_flag = "False", "lowercased", "True"
    elif model_name in _CASED_MODELS and do_lower_case:
        actual_flag, case_name, opposite_flag = "True", "cased", "False"
    else:
        return
    # The wording, including "pre-training", is the original's: scripts and
    # users may match on it.
    raise ValueError(
        f"You passed in `--do_lower_case={actual_flag}` with `--init_checkpoint="
        f"{init_checkpoint}`. However, `{model_name}` seems to be a {case_name} model, "
        f"so you should pass in `--do_lower_case={opposite_flag}` so that the fine-tuning "
        "matches how the model was pre-training. If this error is wrong, please just "
        "comment out this check."
    )


def convert_to_unicode(text):
    """Returns `text` as `str`, decoding bytes as UTF-8 and dropping invalid bytes.

    Args:
      text: A `str` or `bytes` object.

    Returns:
      The text as `str`.

    Raises:
      ValueError: If `text` is neither `str` nor `bytes`.
    """
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)}")


def printable_text(text):
    """Returns `text` as a native `str` for printing and logging; see `convert_to_unicode`."""
    return convert_to_unicode(text)


def load_vocab(vocab_file):
    """Reads a vocabulary file with one token per line.

    Every line, stripped of surrounding whitespace, maps to its 0-based line
    number. A token that appears twice keeps the index of its last line (and
    its first position in the dict), as in the final original release; line
    numbers keep counting, so later tokens are not shifted.

    Args:
      vocab_file: Path of the vocabulary; any `tf.io.gfile` path (e.g. `gs://`).

    Returns:
      An `OrderedDict` mapping token (`str`) to id (`int`).

    Raises:
      ValueError: If the path does not exist, is a directory, or is not UTF-8.
    """
    # Imported here: tokenizing needs no TensorFlow, and its import costs seconds and hundreds
    # of MB in every worker process of create_pretraining_data.
    import tensorflow as tf

    vocab = collections.OrderedDict()
    index = 0
    try:
        # `readline` rather than one `read`: GFile's line reading also
        # normalises carriage returns, and the ids must match the original's.
        with tf.io.gfile.GFile(vocab_file, "r") as reader:
            while True:
                line = convert_to_unicode(reader.readline())
                if not line:
                    break
                vocab[line.strip()] = index
                index += 1
    except tf.errors.NotFoundError as err:
        raise ValueError(
            f"Vocabulary file {vocab_file!r} does not exist. Pass the path of the "
            "vocab.txt that belongs to the model (one token per line)."
        ) from err
    except UnicodeDecodeError as err:
        raise ValueError(
            f"Vocabulary file {vocab_file!r}, line {index + 1}, is not valid UTF-8 "
            f"({err.reason} at byte {err.start}). Save the vocabulary as UTF-8."
        ) from err
    # GFile reads a directory as an empty file; only then is the extra stat paid.
    if not vocab and tf.io.gfile.isdir(vocab_file):
        raise ValueError(
            f"Vocabulary path {vocab_file!r} is a directory. Pass the path of the "
            "vocab.txt file inside it."
        )
    return vocab


def convert_by_vocab(vocab, items):
    """Returns `[vocab[item] for item in items]`; an unknown item raises `KeyError`."""
    return [vocab[item] for item in items]


def convert_tokens_to_ids(vocab, tokens):
    """Returns the ids of `tokens`; an out-of-vocabulary token raises `KeyError`."""
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    """Returns the tokens of `ids`; an unknown id raises `KeyError`."""
    return convert_by_vocab(inv_vocab, ids)


def whitespace_tokenize(text):
    """Splits `text` on runs of (Unicode) whitespace; blank text gives `[]`."""
    return text.split()


class FullTokenizer:
    """Basic tokenization followed by WordPiece: raw text to vocabulary tokens.

    Attributes:
      vocab: `OrderedDict` token -> id, from `load_vocab`.
      inv_vocab: `dict` id -> token.
      basic_tokenizer: The `BasicTokenizer` used.
      wordpiece_tokenizer: The `WordpieceTokenizer` used.
    """

    def __init__(self, vocab_file, do_lower_case=True):
        """Builds the tokenizer.

        Args:
          vocab_file: Path of the vocabulary file (see `load_vocab`).
          do_lower_case: Whether to lower-case and strip accents; must match
            how the checkpoint was pre-trained.
        """
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {index: token for token, index in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

    def tokenize(self, text):
        """Returns the WordPiece tokens (`list` of `str`) of `text` (`str` or `bytes`)."""
        wordpiece = self.wordpiece_tokenizer
        tokens = []
        # Basic tokens are non-empty and hold no whitespace, so each one is a
        # single word for WordPiece.
        for word in self.basic_tokenizer.tokenize(text):
            tokens.extend(wordpiece._tokenize_word(word))
        return tokens

    def convert_tokens_to_ids(self, tokens):
        """Returns the ids of `tokens`; an out-of-vocabulary token raises `KeyError`."""
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        """Returns the tokens of `ids`; an unknown id raises `KeyError`."""
        return convert_by_vocab(self.inv_vocab, ids)


class BasicTokenizer:
    """Cleaning, CJK spacing, optional lower-casing/accent stripping, punctuation split.

    There is no list of protected tokens: "[MASK]" in raw text becomes
    "[", "mask", "]" (or "MASK" when cased).
    """

    def __init__(self, do_lower_case=True):
        """Builds the tokenizer.

        Args:
          do_lower_case: Whether to lower-case and strip accents (NFD, then
            remove `Mn` marks). When false the text is not normalised at all.
        """
        self.do_lower_case = do_lower_case

    def tokenize(self, text):
        """Returns the basic tokens (`list` of `str`) of `text` (`str` or `bytes`)."""
        text = convert_to_unicode(text).translate(_CLEAN_AND_SPACE_CJK)
        lower = bool(self.do_lower_case)
        tokens = []
        for word in text.split():
            tokens.extend(_split_word(word, lower))
        return tokens

    def _clean_text(self, text):
        """Drops NUL, U+FFFD and control characters; maps whitespace to " "."""
        return text.translate(_CLEAN)

    def _tokenize_chinese_chars(self, text):
        """Puts a space before and after every CJK ideograph."""
        return text.translate(_SPACE_CJK)

    def _run_strip_accents(self, text):
        """Applies NFD and removes every non-spacing mark (`Mn`)."""
        return _strip_accents(text)

    def _run_split_on_punc(self, text):
        """Splits `text` into runs of non-punctuation and single punctuation chars."""
        return _split_on_punctuation(text)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece tokenization."""

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        """Builds the tokenizer.

        Args:
          vocab: Container of tokens supporting `in` (usually the dict from
            `load_vocab`); continuation pieces carry a "##" prefix.
          unk_token: Token emitted for a word that cannot be split.
          max_input_chars_per_word: Longer words become `unk_token` at once.
        """
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text):
        """Splits whitespace-separated words into word pieces.

        For example "unaffable" gives ["un", "##aff", "##able"]. A word with any
        position where no piece matches becomes a single `unk_token`, dropping
        the pieces found before it.

        Args:
          text: `str` or `bytes`; normally one token from `BasicTokenizer`.

        Returns:
          A list of word pieces.
        """
        tokens = []
        for word in whitespace_tokenize(convert_to_unicode(text)):
            tokens.extend(self._tokenize_word(word))
        return tokens

    def _tokenize_word(self, word):
        """Returns the word pieces of one non-empty word without whitespace."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        vocab = self.vocab
        pieces = []
        start = 0
        length = len(word)
        while start < length:
            end = length
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    break
                end -= 1
            else:
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces


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
