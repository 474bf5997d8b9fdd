"""In-graph packing of token ids into fixed-length BERT inputs.

The layout is the original's: `[CLS] A [SEP]` for one text and
`[CLS] A [SEP] B [SEP]` for a pair, segment ids 0 up to and including the first
`[SEP]` and 1 after it, mask 1 on real tokens, and id/mask/segment 0 as padding.
Everything works on batches of ragged ids, so it runs inside `tf.data` and
inside exported SavedModels.
"""

import keras
import tensorflow as tf

from data.tokenization.fast_tokenizer import FastFullTokenizer


def truncated_lengths_graph(len_a, len_b, max_length):
    """Lengths left after the original pair truncation, computed without a loop, per row.

    The graph twin of `data.tokenization.packing.truncated_lengths` (same closed form: a
    list at most half of the budget long is kept whole and the other one takes the rest;
    otherwise A keeps `ceil(max_length / 2)` and B `floor(max_length / 2)`).

    Args:
      len_a: int tensor [B], lengths of the first lists.
      len_b: int tensor [B] of the same dtype, lengths of the second lists.
      max_length: Python int >= 0 or int scalar tensor, the budget for both lists together.

    Returns:
      A pair of tensors [B] like `len_a`: the kept lengths of A and of B.
    """
    budget = tf.cast(max_length, len_a.dtype)
    keep_a = tf.minimum(len_a, tf.maximum(budget - len_b, (budget + 1) // 2))
    keep_b = tf.minimum(len_b, tf.maximum(budget - len_a, budget // 2))
    return keep_a, keep_b


def row_prefix(ids, lengths):
    """Returns the first `lengths[i]` values of each row of the ragged `ids`."""
    positions = tf.ragged.range(ids.row_lengths())
    return tf.ragged.boolean_mask(ids, positions < tf.expand_dims(lengths, 1))


def _column(value, present):
    """Ragged [B, (0 or 1)] int32 column holding `value` where `present` is true."""
    lengths = tf.cast(present, tf.int64)
    return tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(lengths)], tf.constant(value, tf.int32)), lengths
    )


def pack_inputs(ids_a, ids_b, max_seq_length, cls_id, sep_id):
    """Builds `input_ids`, `input_mask` and `segment_ids` as the original scripts do.

    As in the original `convert_single_example`, whose two `if tokens_b:` tests
    run before and after truncation: a row whose B has no tokens (no text, or
    only whitespace and control characters) gets the single-text layout and
    truncation, and a B truncated to nothing (possible when `max_seq_length` is
    3 or 4) loses its `[SEP]` too.

    Args:
      ids_a: int RaggedTensor [B, (n)], token ids of the first texts.
      ids_b: int RaggedTensor [B, (m)] of the second texts, or None for single texts.
      max_seq_length: the padded length S (>= 2, and >= 3 with `ids_b`): a Python int, or
        an int32 scalar tensor.
      cls_id: id of `[CLS]`.
      sep_id: id of `[SEP]`.

    Returns:
      A dict with int32 tensors [B, S]: `input_ids`, `input_mask`, `segment_ids`.

    Raises:
      ValueError: If `max_seq_length` is too small for the markers.
    """
    min_length = 2 if ids_b is None else 3
    # A tensor length (TF Hub's `bert_pack_inputs(..., seq_length=)`) is not checked here.
    if isinstance(max_seq_length, int) and max_seq_length < min_length:
        raise ValueError(
            f"max_seq_length={max_seq_length} leaves no room for the [CLS]/[SEP] markers; "
            f"it must be at least {min_length}{' for text pairs' if ids_b is not None else ''}."
        )
    ids_a = tf.cast(ids_a, tf.int32)
    len_a = ids_a.row_lengths()
    if ids_b is None:
        ids_b = tf.RaggedTensor.from_row_lengths(
            tf.zeros([0], tf.int32), tf.zeros_like(len_a), validate=False
        )
    ids_b = tf.cast(ids_b, tf.int32)
    len_b = ids_b.row_lengths()
    is_pair = len_b > 0
    limit = max_seq_length
    if not isinstance(limit, int):
        limit = tf.cast(limit, len_a.dtype)
    pair_a, pair_b = truncated_lengths_graph(len_a, len_b, limit - 3)
    keep_a = tf.where(is_pair, pair_a, tf.minimum(len_a, limit - 2))
    keep_b = tf.where(is_pair, pair_b, tf.zeros_like(len_b))
    part_a = row_prefix(ids_a, keep_a)
    part_b = row_prefix(ids_b, keep_b)

    everywhere = tf.ones_like(is_pair)
    parts = [
        _column(cls_id, everywhere),
        part_a,
        _column(sep_id, everywhere),
        part_b,
        _column(sep_id, keep_b > 0),
    ]
    segments = [tf.zeros_like(part) for part in parts[:3]] + [tf.ones_like(p) for p in parts[3:]]
    input_ids = tf.concat(parts, axis=1)
    shape = [None, max_seq_length]
    if not isinstance(max_seq_length, int):
        shape = tf.stack([tf.cast(input_ids.nrows(), tf.int32), max_seq_length])
    return {
        "input_ids": input_ids.to_tensor(0, shape=shape),
        "input_mask": tf.ones_like(input_ids).to_tensor(0, shape=shape),
        "segment_ids": tf.concat(segments, axis=1).to_tensor(0, shape=shape),
    }


class BertPreprocessor(keras.layers.Layer):
    """Keras layer: raw text (and optional second text) to BERT model inputs.

    Calls `FastFullTokenizer`, then `pack_inputs`, so the output equals
    what the original `convert_single_example` builds from the same strings.

    Example:
      preprocess = BertPreprocessor("vocab.txt", do_lower_case=True, max_seq_length=128)
      features = preprocess(tf.constant(["Is this jacksonville?"]), tf.constant(["No it is not."]))
      # {"input_ids": int32 [1, 128], "input_mask": ..., "segment_ids": ...}
    """

    def __init__(self, vocab_file, do_lower_case=True, max_seq_length=128, **kwargs):
        """Builds the layer.

        Args:
          vocab_file: Path of the vocabulary (needs `[UNK]`, `[CLS]` and `[SEP]`).
          do_lower_case: As for `FullTokenizer`; must match the checkpoint.
          max_seq_length: Padded length S of the outputs (>= 3 for text pairs).
          **kwargs: Passed to `keras.layers.Layer`.

        Raises:
          ValueError: For a vocabulary without the special tokens, or `max_seq_length` < 2.
        """
        super().__init__(trainable=False, **kwargs)
        if max_seq_length < 2:
            raise ValueError(
                f"max_seq_length={max_seq_length} leaves no room for [CLS] and [SEP]; "
                "pass at least 2 (3 for text pairs)."
            )
        self.vocab_file = vocab_file
        self.do_lower_case = bool(do_lower_case)
        self.max_seq_length = int(max_seq_length)
        self.tokenizer = FastFullTokenizer(vocab_file, do_lower_case=do_lower_case)
        missing = [t for t in ("[CLS]", "[SEP]") if t not in self.tokenizer.vocab]
        if missing:
            raise ValueError(f"Vocabulary {vocab_file!r} lacks {missing}; add these tokens.")
        self._cls_id = self.tokenizer.vocab["[CLS]"]
        self._sep_id = self.tokenizer.vocab["[SEP]"]

    def call(self, text_a, text_b=None):
        """Tokenizes and packs.

        Args:
          text_a: string tensor [B], first texts.
          text_b: string tensor [B], second texts, or None.

        Returns:
          A dict of int32 tensors [B, S]: `input_ids`, `input_mask`, `segment_ids`.
        """
        ids_a = self.tokenizer.tokenize(text_a)
        ids_b = None if text_b is None else self.tokenizer.tokenize(text_b)
        return pack_inputs(ids_a, ids_b, self.max_seq_length, self._cls_id, self._sep_id)

    def get_config(self):
        config = super().get_config()
        config.pop("trainable", None)
        config.update(
            vocab_file=self.vocab_file,
            do_lower_case=self.do_lower_case,
            max_seq_length=self.max_seq_length,
        )
        return config
