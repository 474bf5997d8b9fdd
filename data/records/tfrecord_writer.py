"""TFRecord files written without TensorFlow (its import costs more than small data runs).

* `masked_crc32c` computes the TFRecord checksums (CRC-32C) for many records at once with numpy;
  `frame_records` adds TFRecord framing to serialised records.
* `AtomicOutputs` writes records round-robin to several files that appear under their final
  names only when everything succeeded, so a failed run leaves no partial output.
"""

import contextlib
import struct

import numpy as np

from fileio.atomic import atomic_output
from fileio.reading import is_dir, is_remote

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


def open_for_writing(path):
    """Opens `path` (local, or a URL of a TensorFlow file system) to write bytes."""
    if is_remote(path):
        import tensorflow as tf  # remote file systems only; local writing stays TF-free

        return tf.io.gfile.GFile(path, "wb")
    return open(path, "wb")


class AtomicOutputs:
    """Round-robin TFRecord output to several files that appear only on success.

    Records go to temporary files next to the final paths (`fileio.atomic.atomic_output`);
    leaving the `with` block normally renames them, leaving it by an exception deletes them.
    """

    def __init__(self, paths):
        """Opens a temporary file beside each path.

        Args:
          paths: Final output paths (local, or URLs of a TensorFlow file system).

        Raises:
          ValueError: If a path is a directory or its directory is missing or not writable.
        """
        self.paths = list(paths)
        self._files = []
        self._next = 0
        with contextlib.ExitStack() as stack:
            for path in self.paths:
                if is_dir(path):
                    raise ValueError(f"Output file {path!r} is a directory; name a file instead.")
                temp = stack.enter_context(atomic_output(path))
                try:
                    handle = open_for_writing(temp)
                except OSError as err:
                    raise ValueError(
                        f"Cannot write output file {path!r}: {err.strerror}. Create its "
                        "directory or choose a writable location."
                    ) from err
                # Registered after its rename, so it is closed before the rename runs.
                stack.callback(handle.close)
                self._files.append(handle)
            # Every file is open: from here the files live until this object's `with` ends.
            self._stack = stack.pop_all()

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

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return self._stack.__exit__(exc_type, exc, tb)
