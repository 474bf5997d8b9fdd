"""Reading plain-text corpora into token ids for pretraining data, as the original reads them.

The input format is one sentence per line and a blank line between documents. Lines are read as
the original's `tf.gfile.GFile.readline` returns them (every carriage return dropped, split on
"\\n" only), decoded as UTF-8 with invalid bytes dropped, stripped, and tokenized with the exact
`FullTokenizer` pipeline of `data.tokenization.full_tokenizer`. A file's first document
continues the previous file's last one unless a blank line separates them, as in the original.

Token ids are kept in flat arrays (`Corpus`), not as lists of strings, so a corpus costs a few
bytes per token.
"""

import array
import dataclasses
import re

from data.tokenization import full_tokenizer
from fileio.reading import open_for_reading

# Read size for input files; lines are split within each block.
_BLOCK_BYTES = 1 << 22
# Bound on cached words, so that a corpus with endless distinct words cannot grow memory.
_MAX_CACHED_WORDS = 1 << 17
_SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]")
# Characters `str.split` splits on but the tokenizer deletes as control characters.
_SPLIT_MISMATCH = re.compile("[\x0b\x0c\x1c-\x1f\x85]")


class Vocabulary:
    """A WordPiece vocabulary as pretraining data needs it: special ids, "##" flags, words.

    Attributes:
      token_to_id: Dict token -> id; a repeated token keeps its last line number.
      id_to_token: Dict id -> token.
      words: Tokens in vocabulary order without repeats (the original's `vocab_words`,
        from which random replacement words are drawn).
      word_ids: Ids of `words`.
      cls_id, sep_id, mask_id: Ids of the special tokens.
      is_subword: Bytes indexed by id: 1 where the token starts with "##".
      typecode: `array` typecode wide enough for every id.
    """

    def __init__(self, vocab_file):
        """Reads `vocab_file` (one token per line) with `full_tokenizer.load_vocab`.

        Args:
          vocab_file: Path of vocab.txt.

        Raises:
          ValueError: If the file is missing, not UTF-8, or lacks [CLS], [SEP] or [MASK].
        """
        token_to_id = dict(
            full_tokenizer.require_tokens(full_tokenizer.load_vocab(vocab_file), vocab_file)
        )
        missing = [token for token in _SPECIAL_TOKENS if token not in token_to_id]
        if missing:
            raise ValueError(
                f"Vocabulary file {vocab_file!r} lacks {', '.join(missing)}; pretraining data "
                "needs [CLS], [SEP] and [MASK]. Use the vocab.txt of a BERT model."
            )
        self.vocab_file = vocab_file
        self.token_to_id = token_to_id
        self.id_to_token = {index: token for token, index in token_to_id.items()}
        self.words = list(token_to_id)
        self.word_ids = list(token_to_id.values())
        self.cls_id = token_to_id["[CLS]"]
        self.sep_id = token_to_id["[SEP]"]
        self.mask_id = token_to_id["[MASK]"]
        size = max(token_to_id.values()) + 1
        self.is_subword = bytes(
            1 if self.id_to_token.get(i, "").startswith("##") else 0 for i in range(size)
        )
        self.typecode = "H" if size <= 1 << 16 else "i"


class LineTokenizer:
    """`FullTokenizer` tokenization straight to ids, with per-word caches.

    Every step of `BasicTokenizer` after its whitespace split works on one word at a time, so
    a line's tokens are those of its whitespace-separated chunks, each tokenized alone, as long
    as `str.split` splits where the tokenizer does. It splits on a few characters that the
    tokenizer deletes instead (`_SPLIT_MISMATCH`); lines holding one of them go through the
    whole `BasicTokenizer`.
    """

    def __init__(self, vocab, do_lower_case):
        """Builds the tokenizer.

        Args:
          vocab: A `Vocabulary`.
          do_lower_case: Whether to lower-case and strip accents.
        """
        self._vocab = vocab
        self._basic = full_tokenizer.BasicTokenizer(do_lower_case=do_lower_case)
        self._wordpiece = full_tokenizer.WordpieceTokenizer(vocab=vocab.token_to_id)
        self._chunks = {}  # raw whitespace-free chunk -> ids
        self._words = {}  # basic token -> ids

    def _piece_ids(self, word):
        pieces = self._wordpiece.tokenize(word)
        try:
            return tuple(self._vocab.token_to_id[piece] for piece in pieces)
        except KeyError:
            raise ValueError(
                f"The word {word!r} cannot be split into pieces of {self._vocab.vocab_file!r}, "
                "which has no [UNK] token to stand for it. Add [UNK] to the vocabulary."
            ) from None

    def _lookup(self, cache, key, compute):
        if len(cache) >= _MAX_CACHED_WORDS:
            cache.clear()
        cache[key] = value = compute(key)
        return value

    def _chunk_ids(self, chunk):
        ids = ()
        for word in self._basic.tokenize(chunk):
            word_ids = self._words.get(word)
            if word_ids is None:
                word_ids = self._lookup(self._words, word, self._piece_ids)
            ids += word_ids
        return ids

    def ids(self, line):
        """Returns the WordPiece ids (list of int) of one line of text (`str`)."""
        if _SPLIT_MISMATCH.search(line):
            cache, words, compute = self._words, self._basic.tokenize(line), self._piece_ids
        else:
            cache, words, compute = self._chunks, line.split(), self._chunk_ids
        out = []
        for word in words:
            ids = cache.get(word)
            out.extend(ids if ids is not None else self._lookup(cache, word, compute))
        return out


def iter_lines(data_blocks):
    """Yields lines as `GFile.readline` would, from a stream of byte blocks of one file.

    Args:
      data_blocks: Iterable of `bytes`, consecutive pieces of one file.

    Yields:
      Each line (`bytes`) without its "\\n" and with every "\\r" removed; a last line without
      "\\n" is yielded too.
    """
    rest = b""
    for block in data_blocks:
        lines = (rest + block).replace(b"\r", b"").split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest


def read_blocks(path):
    """Yields the content of the file at `path` in blocks."""
    with open_for_reading(path, binary=True) as reader:
        while block := reader.read(_BLOCK_BYTES):
            yield block


@dataclasses.dataclass
class Corpus:
    """Tokenized documents in flat arrays; segments ("sentences") are contiguous in `tokens`.

    Attributes:
      tokens: All token ids, document after document.
      segment_starts: Offset in `tokens` of each segment.
      segment_lengths: Number of tokens of each segment (at least 1).
      document_starts: Index of each document's first segment.
      document_lengths: Number of segments of each document (at least 1).
    """

    tokens: array.array
    segment_starts: array.array = dataclasses.field(default_factory=lambda: array.array("q"))
    segment_lengths: array.array = dataclasses.field(default_factory=lambda: array.array("i"))
    document_starts: array.array = dataclasses.field(default_factory=lambda: array.array("q"))
    document_lengths: array.array = dataclasses.field(default_factory=lambda: array.array("i"))

    @property
    def num_documents(self):
        return len(self.document_starts)


class CorpusBuilder:
    """Accumulates lines into a `Corpus` with the original's document rules."""

    def __init__(self, tokenizer, typecode):
        self._tokenizer = tokenizer
        self.corpus = Corpus(tokens=array.array(typecode))
        self._open_segments = 0

    def add_line(self, raw_line):
        """Adds one line (`bytes`, no newline); a blank line ends the current document."""
        line = raw_line.decode("utf-8", "ignore").strip()
        if not line:
            self.end_document()
            return
        ids = self._tokenizer.ids(line)
        if ids:
            corpus = self.corpus
            corpus.segment_starts.append(len(corpus.tokens))
            corpus.segment_lengths.append(len(ids))
            corpus.tokens.extend(ids)
            self._open_segments += 1

    def end_document(self):
        """Closes the current document; empty documents are dropped."""
        if self._open_segments:
            corpus = self.corpus
            corpus.document_starts.append(len(corpus.segment_starts) - self._open_segments)
            corpus.document_lengths.append(self._open_segments)
            self._open_segments = 0


def read_corpus(input_files, tokenizer, typecode):
    """Reads and tokenizes files in order into one `Corpus`.

    Args:
      input_files: Paths, in reading order.
      tokenizer: A `LineTokenizer`.
      typecode: `array` typecode for token ids (`Vocabulary.typecode`).

    Returns:
      The `Corpus` (documents in reading order).

    Raises:
      ValueError: If a file cannot be read or no file holds any text.
    """
    builder = CorpusBuilder(tokenizer, typecode)
    for path in input_files:
        try:
            for line in iter_lines(read_blocks(path)):
                builder.add_line(line)
        except OSError as err:
            raise ValueError(f"Cannot read input file {path!r}: {err.strerror}.") from None
    builder.end_document()
    if not builder.corpus.num_documents:
        raise ValueError(
            f"The input files {', '.join(input_files)} hold no text. Write one sentence per line "
            "and a blank line between documents."
        )
    return builder.corpus
