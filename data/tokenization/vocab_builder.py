"""Learns a WordPiece vocabulary from raw text and writes it in the layout of Google's vocab.txt.

Text is pre-tokenized with this package's `BasicTokenizer` (same `do_lower_case` as the model
will use), so the pieces are learned on exactly the words `FullTokenizer` later splits.

The learner is the top-down WordPiece algorithm documented for tensorflow-text's vocabulary
generator. For a count threshold T, every substring of every word is counted (`piece` at the start
of a word, `##piece` elsewhere); longest first, a substring is kept when its count reaches T, and
its count is then subtracted from each of its prefixes so that no occurrence counts twice. Later
rounds segment the words with the pieces kept so far and count only substrings that start at
segment boundaries. Unlike the shipped tensorflow-text learner (tensorflow/text#583), only kept
substrings are subtracted, as documented. T is bisected: the largest T giving at least the wanted
number of pieces is taken and its rarest pieces dropped, so the file has exactly `vocab_size`
lines, unless the corpus has fewer pieces seen `min_count` times: then the file is shorter (with a
warning) and `bert_config.json` must use the smaller size.

File layout (Google's, with `VocabLayout()`): reserved tokens ([PAD] 0, [unused0..98] 1-99, [UNK]
100, [CLS] 101, [SEP] 102, [MASK] 103, [unused99..993] 104-998), then every character of the
alphabet in code-point order, then the learned words and pieces by decreasing count, then the
`##c` form of every character not already learned, in code-point order.

Example:
  report = build_vocab_file("corpus/*.txt", "vocab.txt", vocab_size=30522)
  report.unk_rate  # fraction of the corpus' WordPiece tokens that are [UNK]
"""

import collections
import dataclasses
import os
import time

import tensorflow as tf
from absl import logging

from data.tokenization import full_tokenizer
from data.tokenization.wordpiece_learner import JOINER as _JOINER
from data.tokenization.wordpiece_learner import learn_wordpieces
from fileio.atomic import write_atomically
from fileio.patterns import expand_file_patterns

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclasses.dataclass(frozen=True)
class VocabLayout:
    """Ids of the reserved tokens that open the vocabulary; the defaults are Google's.

    Ids not taken by a special token hold `[unused0]`, `[unused1]`, ... in order: room for tokens
    a task adds later without resizing the embeddings.

    Attributes:
      pad_id: Id of `[PAD]`. The original pads input ids with a literal 0, so keep it 0.
      unk_id, cls_id, sep_id, mask_id: Ids of `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`.
      num_unused: Number of `[unusedN]` slots.
    """

    pad_id: int = 0
    unk_id: int = 100
    cls_id: int = 101
    sep_id: int = 102
    mask_id: int = 103
    num_unused: int = 994

    def __post_init__(self):
        ids = self.special_token_ids()
        if self.num_unused < 0:
            raise ValueError(f"num_unused must be >= 0, got {self.num_unused}.")
        if len(set(ids.values())) != len(ids):
            raise ValueError(f"The special token ids must be distinct, got {ids}.")
        for token, index in ids.items():
            if not 0 <= index < self.num_reserved:
                raise ValueError(
                    f"The id {index} of {token} lies outside the {self.num_reserved} reserved "
                    f"lines (5 special tokens + num_unused={self.num_unused}). Use ids from 0 "
                    f"to {self.num_reserved - 1} or raise num_unused."
                )

    @property
    def num_reserved(self):
        return len(SPECIAL_TOKENS) + self.num_unused

    def special_token_ids(self):
        """Returns `{token: id}` for the five special tokens."""
        ids = (self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id)
        return dict(zip(SPECIAL_TOKENS, ids, strict=True))

    def reserved_tokens(self):
        """Returns the `num_reserved` first lines of the vocabulary."""
        by_id = {index: token for token, index in self.special_token_ids().items()}
        unused = (f"[unused{i}]" for i in range(self.num_unused))
        return [by_id[i] if i in by_id else next(unused) for i in range(self.num_reserved)]


@dataclasses.dataclass(frozen=True)
class VocabReport:
    """What `build_vocab_file` wrote: `vocab_size` lines (fewer than asked when the corpus ran
    out) made of reserved tokens, `num_chars` characters as `c` and `##c`, and `num_pieces`
    learned words/pieces of 2+ characters (count >= `threshold`); `lines` and `distinct_words`
    read; `unk_tokens` of the corpus' `total_tokens` WordPiece tokens are `[UNK]`."""

    output_file: str
    vocab_size: int
    num_chars: int
    num_pieces: int
    threshold: int
    lines: int
    distinct_words: int
    total_tokens: int
    unk_tokens: int
    seconds: float

    @property
    def unk_rate(self):
        return self.unk_tokens / max(self.total_tokens, 1)


def count_words(files, do_lower_case=True, max_input_lines=0, progress_interval_s=10.0):
    """Counts the basic tokens (words, punctuation) of text files read line by line.

    Args:
      files: Paths (any `tf.io.gfile` path).
      do_lower_case: Passed to `BasicTokenizer`; must match the model's setting.
      max_input_lines: Stop after this many lines in total (0: read everything).
      progress_interval_s: Seconds between progress log lines.

    Returns:
      `(counts, lines)`: a `collections.Counter` word -> count, and the number of lines read.

    Raises:
      ValueError: If the files hold no text at all.
    """
    tokenizer = full_tokenizer.BasicTokenizer(do_lower_case=do_lower_case)
    counts = collections.Counter()
    lines = num_bytes = 0
    start = last_report = time.monotonic()
    for file_index, path in enumerate(files):
        file_words = 0
        with tf.io.gfile.GFile(path, "rb") as reader:
            for line in reader:
                if max_input_lines and lines >= max_input_lines:
                    break
                lines += 1
                num_bytes += len(line)
                words = tokenizer.tokenize(line)
                file_words += len(words)
                counts.update(words)
                now = time.monotonic()
                if now - last_report >= progress_interval_s:
                    last_report, elapsed = now, now - start
                    logging.info(
                        "Read %d lines, %.1f MB (file %d of %d) in %.0f s: %.0f lines/s, "
                        "%.2f MB/s, %d distinct words",
                        lines, num_bytes / 1e6, file_index + 1, len(files), elapsed,
                        lines / elapsed, num_bytes / 1e6 / elapsed, len(counts),
                    )  # fmt: skip
        if max_input_lines and lines >= max_input_lines:
            logging.info("Stopped after max_input_lines=%d lines, in %s.", lines, path)
            break
        if not file_words:
            logging.warning("Input file %s holds no text.", path)
    if not counts:
        raise ValueError(
            f"The input holds no text: {', '.join(files)} {'is' if len(files) == 1 else 'are'} "
            "empty or blank. Pass text files with one sentence or paragraph per line."
        )
    elapsed = max(time.monotonic() - start, 1e-9)
    logging.info(
        "Read %d lines, %.1f MB from %d file(s) in %.1f s (%.2f MB/s): %d words, %d distinct",
        lines, num_bytes / 1e6, len(files), elapsed, num_bytes / 1e6 / elapsed,
        sum(counts.values()), len(counts),
    )  # fmt: skip
    return counts, lines


def select_alphabet(word_counts, min_count=1, max_chars=0):
    """Returns the characters seen `min_count` times, at most `max_chars` (0: all) of the most
    frequent, sorted by code point; `word_counts` maps word -> count."""
    char_counts = collections.Counter()
    for word, count in word_counts.items():
        for char in word:
            char_counts[char] += count
    chars = [c for c, n in char_counts.items() if n >= min_count]
    chars.sort(key=lambda c: (-char_counts[c], c))
    return sorted(chars[:max_chars] if max_chars else chars)


def assemble_vocab(layout, alphabet, pieces):
    """Returns the vocabulary lines: reserved, characters, learned pieces, remaining `##c`."""
    tokens = layout.reserved_tokens()
    taken = set(tokens)
    by_count = sorted(pieces, key=lambda p: (-pieces[p], p))
    for token in sorted(alphabet) + by_count + [_JOINER + c for c in sorted(alphabet)]:
        if token not in taken:
            taken.add(token)
            tokens.append(token)
    return tokens


def count_unk(vocab, word_counts):
    """Returns `(unk_tokens, total_tokens)` of the corpus under `FullTokenizer`'s WordPiece."""
    wordpiece = full_tokenizer.WordpieceTokenizer(vocab=vocab)
    unk = total = 0
    for word, count in word_counts.items():
        pieces = wordpiece.tokenize(word)
        total += count * len(pieces)
        unk += count * pieces.count(wordpiece.unk_token)
    return unk, total


def _check_output_path(path):
    """Fails before the long run, not after it, if `path` cannot be a file."""
    if tf.io.gfile.isdir(path):
        raise ValueError(f"Output path {path!r} is a directory; pass a file name.")
    directory = os.path.dirname(path) or "."
    # Object stores (gs://) have no directories to check: a file's name is all there is.
    if "://" not in path and not tf.io.gfile.isdir(directory):
        raise ValueError(
            f"Cannot write the output file {path!r}: the directory {directory!r} does not exist. "
            "Create it or choose another path."
        )


def _write_vocab(path, tokens):
    """Writes one token per line, atomically."""
    try:
        write_atomically(path, "".join(token + "\n" for token in tokens))
    except (tf.errors.OpError, OSError) as err:
        raise ValueError(
            f"Cannot write the output file {path!r} ({err}). Create its directory or choose a "
            "writable path."
        ) from err


def build_vocab_file(
    input_file,
    output_file,
    vocab_size,
    do_lower_case=True,
    layout=None,
    min_count=1,
    max_chars=0,
    max_input_lines=0,
    num_iterations=4,
    max_token_chars=32,
    progress_interval_s=10.0,
):
    """Reads text files, learns a vocabulary and writes it to `output_file` (never half-written).

    Args:
      input_file: Comma-separated globs of UTF-8 text files.
      output_file: Path of the vocab.txt to write.
      vocab_size: Lines of the file, reserved tokens included.
      do_lower_case: Lower-case and strip accents (uncased model) or not (cased).
      layout: A `VocabLayout`; None for Google's.
      min_count: Characters and pieces seen fewer times are left out.
      max_chars: Keep at most this many characters, the most frequent (0: no limit).
      max_input_lines: Read at most this many lines (0: all).
      num_iterations: Rounds of the learner.
      max_token_chars: Longest learned piece, in characters.
      progress_interval_s: Seconds between progress log lines while reading.

    Returns:
      A `VocabReport`.

    Raises:
      ValueError: For missing or empty input, a `vocab_size` too small for the reserved tokens
        and the characters, or an output path that cannot be written.
    """
    start = time.monotonic()
    layout = layout or VocabLayout()
    for name, value, lowest in (
        ("min_count", min_count, 1),
        ("num_iterations", num_iterations, 1),
        ("max_token_chars", max_token_chars, 1),
        ("max_chars", max_chars, 0),
        ("max_input_lines", max_input_lines, 0),
    ):
        if value < lowest:
            raise ValueError(f"{name} must be at least {lowest}, got {value}.")
    if vocab_size <= layout.num_reserved:
        raise ValueError(
            f"vocab_size={vocab_size} leaves no room after the {layout.num_reserved} reserved "
            f"tokens (5 special + num_unused={layout.num_unused}). Raise vocab_size (Google's "
            "uncased is 30522) or lower num_unused."
        )
    files = expand_file_patterns(input_file)
    _check_output_path(output_file)
    word_counts, lines = count_words(files, do_lower_case, max_input_lines, progress_interval_s)
    alphabet = select_alphabet(word_counts, min_count, max_chars)
    if not alphabet:
        raise ValueError(
            f"No character occurs min_count={min_count} times in {input_file!r}. Lower "
            "min_count or give more text."
        )
    fixed = layout.num_reserved + 2 * len(alphabet)
    if vocab_size < fixed:
        raise ValueError(
            f"vocab_size={vocab_size} is too small: the {layout.num_reserved} reserved tokens and "
            f"{len(alphabet)} characters (each as c and ##c) need {fixed} lines. Raise vocab_size "
            f"to at least {fixed}, or raise min_count (now {min_count}) or set max_chars to keep "
            "fewer characters."
        )
    if 8 * len(alphabet) > vocab_size:
        logging.warning(
            "The %d characters take %d of %d lines; raise min_count or set max_chars to leave "
            "more room for words.", len(alphabet), 2 * len(alphabet), vocab_size,
        )  # fmt: skip
    pieces, threshold = learn_wordpieces(
        word_counts, alphabet, vocab_size - fixed, min_count, num_iterations, max_token_chars
    )
    tokens = assemble_vocab(layout, alphabet, pieces)
    if len(tokens) < vocab_size:
        logging.warning(
            "The corpus holds only %d pieces with count >= %d: the vocabulary has %d lines, "
            "not %d. Set vocab_size=%d in bert_config.json, or give more text.",
            len(tokens) - fixed, min_count, len(tokens), vocab_size, len(tokens),
        )  # fmt: skip
    _write_vocab(output_file, tokens)
    # Read the file back as FullTokenizer will, so the rate reported is the file's.
    vocab = full_tokenizer.load_vocab(output_file)
    if list(vocab) != tokens or list(vocab.values()) != list(range(len(tokens))):
        raise RuntimeError(f"{output_file} does not read back as written.")
    unk, total = count_unk(vocab, word_counts)
    report = VocabReport(
        output_file, len(tokens), len(alphabet), len(tokens) - fixed, threshold, lines,
        len(word_counts), total, unk, time.monotonic() - start,
    )  # fmt: skip
    logging.info(
        "Wrote %s: %d lines (%d reserved, %d characters x2, %d learned, threshold %d) in %.1f s. "
        "[UNK] rate on the corpus: %.4f%% (%d of %d WordPiece tokens).",
        output_file, report.vocab_size, layout.num_reserved, len(alphabet), report.num_pieces,
        threshold, report.seconds, 100 * report.unk_rate, unk, total,
    )  # fmt: skip
    return report
