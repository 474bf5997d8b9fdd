"""`.npy` files written row block by row block, their length known only at the end.

NumPy's format puts the shape in a header before the data; here the header has a fixed size
(128 bytes, room for any shape), is written first with the rows known so far and rewritten
once the last row is in, so a file of any length streams through a constant amount of memory.
`np.load` (and `mmap_mode="r"`) reads it as any other `.npy` file.
"""

import contextlib

import numpy as np

from fileio.atomic import local_path

_MAGIC = b"\x93NUMPY\x01\x00"
_HEADER_BYTES = 128  # a multiple of 64, as NumPy aligns its data


def npy_header(dtype, shape):
    """The 128 bytes of a version 1.0 `.npy` header.

    Args:
        dtype: a `np.dtype`.
        shape: tuple of ints.

    Returns:
        bytes.
    """
    text = repr(
        {
            "descr": np.lib.format.dtype_to_descr(dtype),
            "fortran_order": False,
            "shape": tuple(shape),
        }
    )
    room = _HEADER_BYTES - len(_MAGIC) - 2 - 1
    if len(text) > room:
        raise ValueError(f"A .npy header of shape {shape} does not fit in {_HEADER_BYTES} bytes.")
    header = (text + " " * (room - len(text)) + "\n").encode("latin1")
    return _MAGIC + len(header).to_bytes(2, "little") + header


class NpyRows:
    """Appends row blocks to a `.npy` file `[rows, *row_shape]`.

    Args:
        path: the file (local or remote).
        dtype: the values' dtype; blocks are cast to it.
        num_rows: the final row count if known (checked at the end), else None.
    """

    def __init__(self, path, dtype, num_rows=None):
        self._stack = contextlib.ExitStack()
        self._path = self._stack.enter_context(local_path(path))
        self._file = self._stack.enter_context(open(self._path, "wb"))
        self._dtype, self._num_rows = np.dtype(dtype), num_rows
        self._row_shape, self._rows = None, 0
        self._file.write(b"\0" * _HEADER_BYTES)

    def append(self, block):
        """Writes `block` `[n, *row_shape]`; every block has the first block's row shape."""
        block = np.ascontiguousarray(block, self._dtype)
        if self._row_shape is None:
            self._row_shape = block.shape[1:]
        elif block.shape[1:] != self._row_shape:
            raise ValueError(f"Rows of shape {block.shape[1:]} after {self._row_shape}.")
        self._file.write(block.tobytes())
        self._rows += len(block)

    def close(self, finish=True):
        """Writes the header (with `finish`) and closes the file."""
        with self._stack:
            if finish:
                if self._num_rows is not None and self._rows != self._num_rows:
                    raise RuntimeError(f"{self._rows} rows written, {self._num_rows} expected.")
                self._file.seek(0)
                self._file.write(npy_header(self._dtype, (self._rows, *(self._row_shape or ()))))
