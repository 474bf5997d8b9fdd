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
import re

from data.tokenization.text_normalization import (
    _CLEAN,
    _CLEAN_AND_SPACE_CJK,
    _SPACE_CJK,
    _split_on_punctuation,
    _split_word,
    _strip_accents,
)
from fileio.errors import UserError
from fileio.reading import is_dir, open_for_reading

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


def _read_vocab_bytes(vocab_file):
    if is_dir(vocab_file):
        raise IsADirectoryError(21, "Is a directory", vocab_file)
    with open_for_reading(vocab_file, binary=True) as reader:
        return reader.read()


def load_vocab(vocab_file):
    """Reads a vocabulary file with one token per line (the one vocabulary reader here).

    Lines are what the original's `tf.gfile.GFile.readline` returns: split on "\n" only, every
    "\r" dropped. Every line, stripped of surrounding whitespace, maps to its 0-based line
    number. A token that appears twice keeps the index of its last line (and its first position
    in the dict), as in the final original release; line numbers keep counting, so later tokens
    are not shifted.

    Args:
      vocab_file: Path of the vocabulary; a local path or a URL TensorFlow reads (gs://).

    Returns:
      An `OrderedDict` mapping token (`str`) to id (`int`).

    Raises:
      ValueError: If the path does not exist, is a directory, or is not UTF-8.
    """
    try:
        data = _read_vocab_bytes(vocab_file)
    except IsADirectoryError:
        raise ValueError(
            f"Vocabulary path {vocab_file!r} is a directory. Pass the path of the "
            "vocab.txt file inside it."
        ) from None
    except OSError as err:
        raise ValueError(
            f"Vocabulary file {vocab_file!r} does not exist or cannot be read "
            f"({getattr(err, 'strerror', None) or err}). Pass the "
            "path of the vocab.txt that belongs to the model (one token per line)."
        ) from None
    lines = data.replace(b"\r", b"").split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    vocab = collections.OrderedDict()
    for index, line in enumerate(lines):
        try:
            vocab[line.decode("utf-8").strip()] = index
        except UnicodeDecodeError as err:
            raise ValueError(
                f"Vocabulary file {vocab_file!r}, line {index + 1}, is not valid UTF-8 "
                f"({err.reason} at byte {err.start}): the file is damaged or in another "
                "encoding; restore the model's vocab.txt or save the vocabulary as UTF-8."
            ) from None
    return vocab


def require_tokens(vocab, vocab_file):
    """Returns `vocab` (from `load_vocab(vocab_file)`), refusing an empty one.

    `load_vocab` reads an empty file as the original does (no tokens); a tokenizer built on it
    would fail on its first word with a bare KeyError.

    Raises:
      UserError: the file holds no tokens.
    """
    if not vocab:
        raise UserError(
            f"Vocabulary file {vocab_file!r} is empty (truncated or damaged?): pass the "
            "vocab.txt that belongs to the model (one token per line)."
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
        self.vocab = require_tokens(load_vocab(vocab_file), vocab_file)
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
