"""TFRecord files of `tf.train.Example` protos, written without TensorFlow.

Importing TensorFlow costs seconds and hundreds of MB, more than making pretraining data
from a few MB of text, so this module writes the bytes itself:

* `ExampleEncoder` serialises the pretraining features as `tf.train.Example` with the map keys in
  sorted order, byte for byte what `SerializeToString(deterministic=True)` gives, so output files
  are reproducible run to run.
* `masked_crc32c` computes the TFRecord checksums (CRC-32C) for many records at once with numpy.
* `AtomicOutputs` writes records round-robin to temporary files and renames them to their final
  names only when everything succeeded, so a failed run leaves no partial output.
"""

import os
import struct

import numpy as np

_CRC32C_POLY = 0x82F63B78  # Castagnoli polynomial, bit-reversed
_MASK_DELTA = 0xA282EAD8
# Records per vectorised CRC call: bounds the temporary [batch, record length] arrays.
_CRC_BATCH = 256
_pack_uint32 = struct.Struct("<I").pack
_pack_uint64 = struct.Struct("<Q").pack


def _byte_table():
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_CRC32C_POLY), table >> 1)
    return table.astype(np.uint32)


class _Crc32cTables:
    """Tables for the CRC-32C of byte strings as a sum over their bytes.

    The CRC register update is linear over GF(2), so the register after a message equals
    `K[L]` (the initial value pushed through L zero bytes) XOR, for every byte, the effect of
    that byte pushed through the bytes after it. `effect[d][b]` is the effect of byte value `b`
    followed by `d` more bytes. Leading zero bytes add nothing, which lets records of different
    lengths share one right-aligned array.
    """

    def __init__(self):
        self.byte = _byte_table()
        self.effect = self.byte[None, :].copy()
        self.initial = np.array([0xFFFFFFFF], dtype=np.uint32)

    def _advance(self, values):
        return self.byte[values & 0xFF] ^ (values >> 8)

    def ensure(self, length):
        """Grows the tables to cover messages of up to `length` bytes."""
        have = len(self.effect)
        if have >= length:
            return
        rows = [self.effect]
        last = self.effect[-1]
        for _ in range(max(length, 2 * have) - have):
            last = self._advance(last)
            rows.append(last[None, :])
        self.effect = np.concatenate(rows)
        values = [self.initial]
        last = self.initial[-1:]
        for _ in range(len(self.effect) + 1 - len(self.initial)):
            last = self._advance(last)
            values.append(last)
        self.initial = np.concatenate(values)


_TABLES = _Crc32cTables()


def masked_crc32c(messages):
    """Returns the masked CRC-32C of each message, as TFRecord framing uses it.

    Args:
      messages: List of `bytes`.

    Returns:
      uint32 array [len(messages)].
    """
    lengths = np.fromiter((len(m) for m in messages), dtype=np.int64, count=len(messages))
    if not len(messages):
        return np.zeros(0, dtype=np.uint32)
    width = int(lengths.max())
    _TABLES.ensure(width)
    flat = np.frombuffer(b"".join(messages), dtype=np.uint8)
    padded = np.zeros((len(messages), width), dtype=np.uint8)
    padded[np.arange(width)[None, :] >= (width - lengths)[:, None]] = flat
    effects = _TABLES.effect[np.arange(width - 1, -1, -1)[None, :], padded]
    crc = ~(np.bitwise_xor.reduce(effects, axis=1) ^ _TABLES.initial[lengths])
    return (((crc >> 15) | (crc << 17)) + np.uint32(_MASK_DELTA)).astype(np.uint32)


def frame_records(records):
    """Returns each record in TFRecord framing: length, its CRC, data, data CRC.

    Args:
      records: List of serialised records (`bytes`).

    Returns:
      List of framed records (`bytes`), in order; their concatenation is a TFRecord file.
    """
    framed = []
    for start in range(0, len(records), _CRC_BATCH):
        batch = records[start : start + _CRC_BATCH]
        headers = [_pack_uint64(len(r)) for r in batch]
        header_crcs = masked_crc32c(headers).tolist()
        data_crcs = masked_crc32c(batch).tolist()
        for header, header_crc, record, data_crc in zip(
            headers, header_crcs, batch, data_crcs, strict=True
        ):
            framed.append(
                b"".join((header, _pack_uint32(header_crc), record, _pack_uint32(data_crc)))
            )
    return framed


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


def _int64_feature(packed):
    # Feature.int64_list is field 3; Int64List.value is packed field 1.
    return _field(b"\x1a", _field(b"\x0a", packed))


def _float_feature(packed):
    # Feature.float_list is field 2; FloatList.value is packed field 1.
    return _field(b"\x12", _field(b"\x0a", packed))


def _varint_of(size):
    return _SMALL_VARINTS[size] if size < 16384 else _varint(size)


def _int64_entry(key_field, packed):
    """`_map_entry(key, _int64_feature(packed))` with one join; `key_field` is field 1."""
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


class AtomicOutputs:
    """Round-robin TFRecord output to several files that appear only on success.

    Records go to temporary files next to the final paths; `commit` renames them, `abort` (or
    leaving a `with` block by an exception) deletes them.
    """

    def __init__(self, paths):
        """Opens a temporary file beside each path.

        Args:
          paths: Final output paths (local files).

        Raises:
          ValueError: If a path is a directory or its directory is missing or not writable.
        """
        self.paths = list(paths)
        self._temps = [f"{p}.tmp-{os.getpid()}" for p in self.paths]
        self._files = []
        self._next = 0
        for path, temp in zip(self.paths, self._temps, strict=True):
            if os.path.isdir(path):
                self.abort()
                raise ValueError(f"Output file {path!r} is a directory; name a file instead.")
            try:
                self._files.append(open(temp, "wb"))  # closed in commit or abort
            except OSError as err:
                self.abort()
                raise ValueError(
                    f"Cannot write output file {path!r}: {err.strerror}. Create its directory "
                    "or choose a writable location."
                ) from err

    def write_framed(self, framed):
        """Writes framed records (see `frame_records`), each to the next file in turn."""
        count = len(self._files)
        first = self._next
        for offset in range(count):
            part = framed[(offset - first) % count :: count]
            if part:
                self._files[offset].write(b"".join(part))
        self._next = (first + len(framed)) % count

    def write_blob(self, blob, ends):
        """Writes framed records given as one `bytes` object and each record's end offset.

        Args:
          blob: Concatenated framed records (see `frame_records`).
          ends: End offset of each record in `blob` (sequence of int, e.g. an `array`).
        """
        count = len(self._files)
        if not len(ends):
            return
        if count == 1:
            self._files[0].write(blob)
        else:
            view = memoryview(blob)
            starts = [0, *ends[:-1]]
            for offset in range(count):
                first = (offset - self._next) % count
                pairs = zip(starts[first::count], ends[first::count], strict=True)
                parts = [view[start:end] for start, end in pairs]
                self._files[offset].write(b"".join(parts))
        self._next = (self._next + len(ends)) % count

    def commit(self):
        """Closes the temporary files and renames them to the final paths."""
        for handle in self._files:
            handle.close()
        for temp, path in zip(self._temps, self.paths, strict=True):
            os.replace(temp, path)
        self._files = []

    def abort(self):
        """Closes and deletes the temporary files."""
        for handle in self._files:
            handle.close()
        self._files = []
        for temp in self._temps:
            if os.path.exists(temp):
                os.remove(temp)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.abort()
