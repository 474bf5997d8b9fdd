"""Reading user paths on any file system TensorFlow knows, as the original's `tf.gfile` did.

Local paths use Python's own calls, so the TensorFlow-free tools (create_pretraining_data.py's
workers, build_vocab.py) stay TensorFlow-free; URLs (`gs://`, `s3://`, `hdfs://`, and `ram://`,
which the tests use) go through `tf.io.gfile`. The writing side is `fileio.atomic`.
"""

import os


def is_remote(path):
    """True for a URL of a TensorFlow file system (`scheme://...`), False for a local path."""
    return "://" in str(path)


def _gfile():
    import tensorflow as tf  # remote file systems only; local reading stays TF-free

    return tf.io.gfile


def open_for_reading(path, binary=False):
    """Opens `path` to read: bytes with `binary`, else UTF-8 text with newlines as they are.

    Raises:
        OSError: the file is missing or unreadable (for URLs too, with the path in it).
    """
    if is_remote(path):
        gfile = _gfile()
        if not gfile.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        return gfile.GFile(path, "rb" if binary else "r")
    if binary:
        return open(path, "rb")
    return open(path, encoding="utf-8", newline="")


def is_file(path):
    """True if `path` exists and is not a directory."""
    if is_remote(path):
        return _gfile().exists(path) and not _gfile().isdir(path)
    return os.path.isfile(path)


def is_dir(path):
    """True if `path` is a directory."""
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def file_size(path):
    """The size of the file at `path` in bytes."""
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def walk(top):
    """`os.walk(top)` on any file system: (directory, subdirectories, files) tuples."""
    if is_remote(top):
        for directory, subdirectories, files in _gfile().walk(top):
            yield directory.rstrip("/"), subdirectories, files
    else:
        yield from os.walk(top)
