"""Pretraining instances serialised as `tf.train.Example` protos, without TensorFlow.

Importing TensorFlow costs seconds and hundreds of MB, more than making pretraining data from a
few MB of text, so the protobuf bytes are written here directly. `ExampleEncoder` gives, byte for
byte, what `SerializeToString(deterministic=True)` gives (map keys in sorted order), so output
files are reproducible run to run; `data.records.tfrecord_writer` frames and writes them.
"""

import struct


def _varint(value):
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = [_varint(n) for n in range(1 << 14)]


def _field(tag, payload):
    size = len(payload)
    return tag + (_SMALL_VARINTS[size] if size < 16384 else _varint(size)) + payload


def _map_entry(key, feature):
    # Features.feature (field 1) entries: key (field 1), Feature (field 2).
    return _field(b"\x0a", _field(b"\x0a", key.encode()) + _field(b"\x12", feature))


def _values(packed):
    # An empty packed field is not written at all (as protobuf serialises an empty list, e.g.
    # the masked-LM lists of --max_predictions_per_seq=0).
    return _field(b"\x0a", packed) if packed else b""


def _int64_feature(packed):
    # Feature.int64_list is field 3; Int64List.value is packed field 1.
    return _field(b"\x1a", _values(packed))


def _float_feature(packed):
    # Feature.float_list is field 2; FloatList.value is packed field 1.
    return _field(b"\x12", _values(packed))


def _varint_of(size):
    return _SMALL_VARINTS[size] if size < 16384 else _varint(size)


def _int64_entry(key_field, packed):
    """`_map_entry(key, _int64_feature(packed))` with one join; `key_field` is field 1."""
    if not packed:
        return _field(b"\x0a", key_field + _field(b"\x12", _int64_feature(packed)))
    list_size = 1 + len(_varint_of(len(packed))) + len(packed)
    feature_size = 1 + len(_varint_of(list_size)) + list_size
    entry_size = len(key_field) + 1 + len(_varint_of(feature_size)) + feature_size
    return b"".join(
        (b"\x0a", _varint_of(entry_size), key_field, b"\x12", _varint_of(feature_size), b"\x1a",
         _varint_of(list_size), b"\x0a", _varint_of(len(packed)), packed)
    )  # fmt: skip


_INPUT_IDS_KEY = _field(b"\x0a", b"input_ids")
_MASKED_LM_IDS_KEY = _field(b"\x0a", b"masked_lm_ids")
_POSITIONS_KEY = _field(b"\x0a", b"masked_lm_positions")


class ExampleEncoder:
    """Serialises pretraining instances as `tf.train.Example` with sorted feature keys.

    The features are those of the original's `write_instance_to_example_files`: `input_ids`,
    `input_mask`, `segment_ids` (int64, padded with 0 to `max_seq_length`),
    `masked_lm_positions`, `masked_lm_ids` (int64) and `masked_lm_weights` (float, 1.0 per
    prediction), padded with 0 to `max_predictions_per_seq`, and `next_sentence_labels` (int64,
    one value). Entries that depend only on lengths are cached.
    """

    def __init__(self, max_seq_length, max_predictions_per_seq, vocab_size):
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self._varints = [_varint(i) for i in range(max(vocab_size, max_seq_length))]
        self._mask_entries = {}
        self._segment_entries = {}
        self._weight_entries = {}
        self._label_entries = [
            _map_entry("next_sentence_labels", _int64_feature(_varint(label))) for label in (0, 1)
        ]

    def _ints(self, values, padded_length):
        packed = b"".join(map(self._varints.__getitem__, values))
        return packed + b"\x00" * (padded_length - len(values))

    def encode(self, input_ids, len_a, positions, label_ids, is_random_next):
        """Returns the serialised `tf.train.Example` of one instance.

        Args:
          input_ids: Token ids of `[CLS] A [SEP] B [SEP]` after masking (ints).
          len_a: Number of tokens of segment A (without `[CLS]`/`[SEP]`).
          positions: Masked positions in increasing order (ints).
          label_ids: Original token ids at `positions`.
          is_random_next: Whether B is a random segment (label 1).

        Returns:
          The serialised proto (`bytes`).
        """
        length = len(input_ids)
        seq, preds = self.max_seq_length, self.max_predictions_per_seq
        num_masked = len(positions)
        mask = self._mask_entries.get(length)
        if mask is None:
            ones = b"\x01" * length + b"\x00" * (seq - length)
            mask = self._mask_entries[length] = _map_entry("input_mask", _int64_feature(ones))
        segments = self._segment_entries.get((len_a, length))
        if segments is None:
            zeros = len_a + 2
            packed = b"\x00" * zeros + b"\x01" * (length - zeros) + b"\x00" * (seq - length)
            segments = _map_entry("segment_ids", _int64_feature(packed))
            self._segment_entries[(len_a, length)] = segments
        weights = self._weight_entries.get(num_masked)
        if weights is None:
            packed = struct.pack(f"<{preds}f", *([1.0] * num_masked + [0.0] * (preds - num_masked)))
            weights = _map_entry("masked_lm_weights", _float_feature(packed))
            self._weight_entries[num_masked] = weights
        features = b"".join(
            (
                _int64_entry(_INPUT_IDS_KEY, self._ints(input_ids, seq)),
                mask,
                _int64_entry(_MASKED_LM_IDS_KEY, self._ints(label_ids, preds)),
                _int64_entry(_POSITIONS_KEY, self._ints(positions, preds)),
                weights,
                self._label_entries[1 if is_random_next else 0],
                segments,
            )
        )
        return b"\x0a" + _varint_of(len(features)) + features
