"""In-graph BERT tokenization with the same ids as `FullTokenizer` (full_tokenizer.py).

`FastFullTokenizer` maps a batch of strings to WordPiece ids with TensorFlow ops
only, so it runs inside `tf.data` and inside exported SavedModels (raw text in).
`BertPreprocessor` (preprocessor.py) adds the original's `[CLS] A [SEP] B [SEP]` packing.

Every rule of `BasicTokenizer` (cleaning, CJK spacing, lower-casing with the
Greek final sigma, NFD with canonical reordering, accent stripping, punctuation
and whitespace splitting) runs on code points, with tables computed from this
interpreter's `unicodedata` and `str.lower`: ICU's and RE2's character data have
other Unicode versions, and their lower-casing differs from Python's. WordPiece
is `text.FastWordpieceTokenizer` on the split words; words over 200 characters
become `[UNK]` before it, since its own limit counts bytes.

The ids equal `FullTokenizer.tokenize` then `convert_tokens_to_ids` on the same
UTF-8 bytes, for every input, within these bounds:
  * Input is bytes: invalid UTF-8 is dropped, as by the original's
    `bytes.decode("utf-8", "ignore")`. A Python `str` holding lone surrogates has
    no UTF-8 form; FullTokenizer keeps such surrogates, no string tensor can.
  * The tables are the building interpreter's and are frozen into SavedModels;
    another Python (Unicode) version may treat newly assigned characters otherwise.
  * A vocabulary token of at most 200 characters but over 256 UTF-8 bytes
    (FastWordpieceTokenizer's limit) is refused with a ValueError.
  * Loading such a SavedModel needs `import tensorflow_text` first (WordPiece op).

Example:
  tokenizer = FastFullTokenizer("uncased_L-12_H-768_A-12/vocab.txt", do_lower_case=True)
  tokenizer.tokenize(tf.constant(["Hello, world!"]))  # int64 RaggedTensor [1, (n)]
"""

import tensorflow as tf
import tensorflow_text as text

from data.tokenization import full_tokenizer, unicode_classes

# FastWordpieceTokenizer's limit on a vocabulary token (without "##").
_MAX_TOKEN_BYTES = 256

_CAPITAL_SIGMA = 0x3A3
_FINAL_SIGMA = 0x3C2


def _follows_break(flags, word_ids):
    """True where a position starts the array, starts a new word, or follows a `flags` position."""
    same_word = tf.equal(word_ids[1:], word_ids[:-1])
    breaks = tf.concat([[True], tf.logical_or(flags[:-1], tf.logical_not(same_word))], axis=0)
    return breaks[: tf.size(flags)]  # an empty input gives an empty result


def _runs(starts):
    """Turns bool [N] run starts into int64 run numbers 0, 0, 1, ... (empty-safe)."""
    return tf.cumsum(tf.cast(starts, tf.int64)) - 1


class FastFullTokenizer(tf.Module):
    """`FullTokenizer` as TensorFlow ops: a batch of strings to WordPiece ids.

    Works eagerly, in `tf.function`, in `Dataset.map` and in SavedModels
    (`tf.saved_model.save` of a module that calls it); all tables are graph
    constants and no Python runs at call time.

    Attributes:
      vocab: `OrderedDict` token -> id, as `full_tokenizer.load_vocab` reads it.
      do_lower_case: Whether text is lower-cased and accent-stripped.
    """

    def __init__(
        self,
        vocab_file,
        do_lower_case=True,
        unk_token="[UNK]",
        max_input_chars_per_word=200,
        name=None,
    ):
        """Builds the tokenizer.

        Args:
          vocab_file: Path of the vocabulary, one token per line (see `full_tokenizer.load_vocab`).
          do_lower_case: As for `FullTokenizer`; must match the checkpoint.
          unk_token: Token emitted for words WordPiece cannot split.
          max_input_chars_per_word: Longer words (in code points) become `unk_token`.
          name: Optional module name.

        Raises:
          ValueError: If the vocabulary cannot be read, lacks `unk_token`, or holds a
            token of at most `max_input_chars_per_word` characters but more than 256
            UTF-8 bytes (FastWordpieceTokenizer's limit; real vocabularies have none).
        """
        super().__init__(name=name)
        self.vocab = full_tokenizer.load_vocab(vocab_file)
        self.do_lower_case = bool(do_lower_case)
        if unk_token not in self.vocab:
            raise ValueError(
                f"Vocabulary {vocab_file!r} has no {unk_token!r} line; the in-graph tokenizer "
                "needs the unknown token in the vocabulary. Add it or pass unk_token=."
            )
        self._unk_token = unk_token
        self._max_chars = int(max_input_chars_per_word)
        tables = unicode_classes.unicode_tables()
        self._class_starts = tf.constant(tables["class_starts"])
        self._class_bits = tf.constant(tables["class_bits"])
        if self.do_lower_case:
            self._lower_keys = tf.constant(tables["lower_keys"])
            self._lower_splits = tf.constant(tables["lower_splits"])
            self._lower_values = tf.constant(tables["lower_values"])
        self._wordpiece = text.FastWordpieceTokenizer(
            vocab=self._id_ordered_tokens(vocab_file),
            suffix_indicator="##",
            # In bytes, so 4 per character; longer words became `unk_token` before.
            max_bytes_per_word=4 * max(self._max_chars, len(unk_token)),
            token_out_type=tf.int64,
            unknown_token=unk_token,
            no_pretokenization=True,
        )

    def _id_ordered_tokens(self, vocab_file):
        """Returns the token of every id; ids that can never be emitted get a filler."""
        tokens = [None] * (max(self.vocab.values()) + 1)
        for token, index in self.vocab.items():
            body = token[2:] if token.startswith("##") else token
            if len(body) > self._max_chars:
                continue  # longer than any word WordPiece looks at
            if len(body.encode("utf-8")) > _MAX_TOKEN_BYTES:
                raise ValueError(
                    f"Vocabulary {vocab_file!r}, line {index + 1}: token {token[:40]!r}... has "
                    f"more than {_MAX_TOKEN_BYTES} UTF-8 bytes, which FastWordpieceTokenizer "
                    "cannot hold. Use FullTokenizer (data/tokenization/full_tokenizer.py) for "
                    "this vocabulary."
                )
            tokens[index] = token
        # A duplicated vocabulary line leaves its first id unused. Fillers start with a
        # space, which neither stripped vocabulary lines nor words contain: never matched.
        return [f" unused id {i}" if t is None else t for i, t in enumerate(tokens)]

    def _classes(self, cps):
        """Class flags (int64 [N]) of the code points `cps` (int32 [N])."""
        index = tf.searchsorted(self._class_starts, cps, side="right") - 1
        return tf.gather(self._class_bits, index)

    def tokenize(self, text_input):
        """Tokenizes a batch of strings.

        Args:
          text_input: string tensor [B] (or a scalar) of UTF-8 text; invalid bytes are dropped.

        Returns:
          int64 RaggedTensor [B, (n)] of token ids ([n] for a scalar input).

        Raises:
          ValueError: If `text_input` has rank 2 or more.
        """
        text_input = tf.convert_to_tensor(text_input, tf.string)
        if text_input.shape.rank == 0:
            return self.tokenize(tf.expand_dims(text_input, 0))[0]
        pieces, first_tokens = self._pieces_per_token(text_input)
        return tf.RaggedTensor.from_row_splits(
            pieces.values, tf.gather(pieces.row_splits, first_tokens), validate=False
        )

    def tokenize_words(self, text_input):
        """As `tokenize` for strings [B], but int64 [B, (words), (pieces)]: the pieces of each
        basic token (`BasicTokenizer`'s words: whitespace, punctuation and CJK split)."""
        pieces, first_tokens = self._pieces_per_token(tf.convert_to_tensor(text_input, tf.string))
        return tf.RaggedTensor.from_row_splits(
            pieces, tf.cast(first_tokens, pieces.row_splits.dtype), validate=False
        )

    def _pieces_per_token(self, text_input):
        """(int64 ragged [T, (pieces)] over the batch's T basic tokens, int64 [B + 1] splits of
        the tokens per row)."""
        tokens, first_tokens = self.basic_tokens(text_input)
        words = tf.strings.unicode_encode(tokens, "UTF-8")
        # The vocabulary holds `unk_token` itself, so WordPiece maps it to its id.
        words = tf.where(tokens.row_lengths() > self._max_chars, self._unk_token, words)
        return self._wordpiece.tokenize(words), first_tokens

    def basic_tokens(self, text_input):
        """`BasicTokenizer.tokenize` of strings [B]: (int32 ragged [T, (code points)] of the
        batch's T tokens, int64 [B + 1] splits of the tokens per row)."""
        if text_input.shape.rank != 1:
            raise ValueError(
                f"FastFullTokenizer.tokenize expects a string tensor [batch] or a scalar, got "
                f"shape {text_input.shape}. Reshape the texts to one dimension first."
            )
        decoded = tf.strings.unicode_decode(text_input, "UTF-8", errors="ignore")
        num_rows = decoded.nrows()
        cps, splits = decoded.values, decoded.row_splits
        bits = self._classes(cps)

        keep = tf.equal(bits & unicode_classes.DROP, 0)

        def drop():
            kept_splits = tf.gather(tf.concat([[0], tf.cumsum(tf.cast(keep, tf.int64))], 0), splits)
            return tf.boolean_mask(cps, keep), tf.boolean_mask(bits, keep), kept_splits

        # Each tf.cond here skips work that typical text does not need.
        cps, bits, splits = tf.cond(tf.reduce_all(keep), lambda: (cps, bits, splits), drop)
        # Row starts, as flags (bincount is cheaper than row ids per code point).
        size = tf.size(cps, tf.int64)
        row_start = tf.math.bincount(splits[:-1], minlength=size + 1, dtype=tf.int32)[:size] > 0
        is_space = tf.not_equal(bits & unicode_classes.SPACE, 0)
        is_cjk = tf.not_equal(bits & unicode_classes.CJK, 0)
        after_break = tf.concat([[True], tf.logical_or(is_space, is_cjk)[:-1]], 0)[:size]
        word_start = tf.logical_and(tf.logical_not(is_space), is_cjk | after_break | row_start)
        starts = tf.where(word_start)[:, 0]
        word_rows = tf.searchsorted(splits, starts, side="right", out_type=tf.int64) - 1
        cps, bits, word_start = (
            tf.boolean_mask(x, tf.logical_not(is_space)) for x in (cps, bits, word_start)
        )
        word_ids = _runs(word_start)

        if self.do_lower_case:
            cps, is_punct, word_ids = self._lower_and_strip_accents(cps, bits, word_ids)
        else:
            is_punct = tf.not_equal(bits & unicode_classes.PUNCT, 0)

        # Punctuation characters become tokens of their own inside each word.
        token_start = tf.logical_or(is_punct, _follows_break(is_punct, word_ids))
        token_ids = _runs(token_start)
        token_rows = tf.gather(word_rows, tf.boolean_mask(word_ids, token_start))
        tokens = tf.RaggedTensor.from_value_rowids(
            cps, token_ids, nrows=tf.reduce_sum(tf.cast(token_start, tf.int64))
        )
        return tokens, tf.searchsorted(token_rows, tf.range(num_rows + 1), side="left")

    def _lower_and_strip_accents(self, cps, bits, word_ids):
        """`str.lower()`, NFD and removal of `Mn` marks, word by word.

        Args:
          cps: int32 [N] code points of the words, concatenated.
          bits: int64 [N] their class flags.
          word_ids: int64 [N] word number of each code point (non-decreasing).

        Returns:
          The new code points (int32 [M]), whether each is punctuation (bool [M]), and
          their word numbers (int64 [M]).
        """

        def final_sigmas():
            final = self._is_final_sigma(cps, bits, word_ids)
            # U+03C2 lower-cases to itself: clear the capital's delta.
            return tf.where(final, _FINAL_SIGMA, cps), tf.where(
                final, bits & unicode_classes.NO_DELTA, bits
            )

        has_sigma = tf.reduce_any(tf.equal(cps, _CAPITAL_SIGMA))
        cps, bits = tf.cond(has_sigma, final_sigmas, lambda: (cps, bits))

        def first_code_points():
            lowered = cps + tf.cast(
                tf.bitwise.right_shift(bits, unicode_classes.DELTA_SHIFT), tf.int32
            )
            is_punct = tf.not_equal(bits & unicode_classes.LOWER_PUNCT, 0)
            keep = tf.equal(bits & unicode_classes.VANISH, 0)
            return tuple(tf.boolean_mask(x, keep) for x in (lowered, is_punct, word_ids))

        is_complex = tf.reduce_any(tf.not_equal(bits & unicode_classes.COMPLEX, 0))
        return tf.cond(
            is_complex, lambda: self._expand_and_reorder(cps, word_ids), first_code_points
        )

    def _expand_and_reorder(self, cps, word_ids):
        """Lower-casing for `unicode_classes.COMPLEX` text: NFD(lower(c)) looked up, reordered, marks removed."""
        num_keys = tf.shape(self._lower_keys)[0]
        slot = tf.minimum(tf.searchsorted(self._lower_keys, cps, side="left"), num_keys - 1)
        found = tf.equal(tf.gather(self._lower_keys, slot), cps)
        first = tf.gather(self._lower_splits, slot)
        lengths = tf.where(found, tf.gather(self._lower_splits, slot + 1) - first, 1)
        offsets = tf.ragged.range(lengths)
        source = offsets.value_rowids()
        mapped = tf.gather(self._lower_values, tf.gather(first, source) + offsets.values)
        cps = tf.where(tf.gather(found, source), mapped, tf.gather(cps, source))
        word_ids = tf.gather(word_ids, source)

        # Canonical reordering (a stable sort by combining class within runs of
        # non-starters) matters only for the few spacing marks with a class.
        bits = self._classes(cps)
        ccc = tf.bitwise.right_shift(bits, unicode_classes.CCC_SHIFT) & 255
        segment = _runs(_follows_break(tf.zeros_like(ccc, tf.bool), word_ids) | tf.equal(ccc, 0))
        order = tf.argsort(segment * 256 + ccc, stable=True)
        cps, bits, word_ids = (tf.gather(x, order) for x in (cps, bits, word_ids))

        keep = tf.equal(bits & unicode_classes.MARK, 0)
        is_punct = tf.not_equal(bits & unicode_classes.PUNCT, 0)
        return tuple(tf.boolean_mask(x, keep) for x in (cps, is_punct, word_ids))

    def _is_final_sigma(self, cps, bits, word_ids):
        """bool [N]: capital sigmas that `str.lower()` turns into U+03C2 in their word."""
        # Nearest positions before/after each position that are not skipped.
        stops = tf.equal(bits & unicode_classes.SIGMA_SKIP, 0)
        stop_positions = tf.concat([tf.where(stops)[:, 0], tf.zeros([1], tf.int64)], axis=0)
        num_stops = tf.shape(stop_positions, out_type=tf.int64)[0] - 1
        stops_before = tf.cumsum(tf.cast(stops, tf.int64), exclusive=True)
        stops_upto = stops_before + tf.cast(stops, tf.int64)
        cased = tf.not_equal(bits & unicode_classes.SIGMA_CASED, 0)

        def cased_at(stop_index, exists):
            position = tf.gather(stop_positions, tf.clip_by_value(stop_index, 0, num_stops))
            same_word = tf.equal(tf.gather(word_ids, position), word_ids)
            return exists & same_word & tf.gather(cased, position)

        cased_before = cased_at(stops_before - 1, stops_before > 0)
        cased_after = cased_at(stops_upto, stops_upto < num_stops)
        is_sigma = tf.equal(cps, _CAPITAL_SIGMA)
        return is_sigma & cased_before & tf.logical_not(cased_after)
