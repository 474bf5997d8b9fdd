"""Output files that appear complete or not at all: written under a temporary name, then renamed.

Every file the project writes goes through here: a run that is interrupted, or fails on bad
input, leaves the previous file (or none) under the final name, never a truncated one.

* `write_atomically(path, data)`: a whole file from bytes or text.
* `open_atomically(path, mode)`: a file object to stream into (JSON lines, TSV rows).
* `atomic_output(path)`: a temporary path for writers that take a path (TFRecordWriter, Keras).
* `atomic_prefix(prefix)`: a temporary prefix for writers of several `prefix.*` files (a
  TensorFlow checkpoint), renamed together.
* `atomic_directory(path)`: a temporary directory for writers of a whole tree (a SavedModel).
* `write_safetensors(path, tensors, metadata)`: a `.safetensors` file, by the safetensors
  package's own writer.
* `local_path(path)`: a local stand-in for a remote path, for writers that need a local file.
* `require_free_space(directory, nbytes, path)`: refuses early where a writer cannot fail
  cleanly on a full disk (HDF5 crashes when it cannot write).

A full disk while any of them writes (Python's OSError ENOSPC, or the error TensorFlow's writers
raise: ResourceExhaustedError "...; No space left on device") becomes `fileio.errors.no_space_error`
naming the final path, after the temporary files are removed.

Paths are local, or URLs of a file system TensorFlow knows (gs://, s3://, hdfs://); TensorFlow is
imported only for the latter.
"""

import contextlib
import glob
import os
import shutil
import tempfile
import uuid

from fileio.errors import is_no_space, no_space_error


def _is_remote(path):
    return "://" in path


def _gfile():
    import tensorflow as tf  # only remote file systems need it; local writes stay TF-free

    return tf.io.gfile


def _tf_not_found():
    import tensorflow as tf

    return tf.errors.NotFoundError


def _temporary_name(path):
    # Beside the final file, so the rename never crosses file systems; the final name comes last
    # because some writers insist on its suffix (Keras: ".weights.h5").
    directory, name = os.path.split(path)
    return os.path.join(directory, f".tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}-{name}")


def _matching(prefix):
    if _is_remote(prefix):
        return _gfile().glob(prefix + ".*")
    return glob.glob(glob.escape(prefix) + ".*")


def _remove_if_present(path):
    if _is_remote(path):
        if _gfile().exists(path):
            _gfile().remove(path)
    elif os.path.lexists(path):
        os.remove(path)


def _remove_tree(path):
    if _is_remote(path):
        if _gfile().exists(path):
            try:
                _gfile().rmtree(path)
            except _tf_not_found():
                pass  # file systems listing by name prefix (ram://) report what is gone
    elif os.path.lexists(path):
        shutil.rmtree(path)


@contextlib.contextmanager
def _full_disk_names(path):
    """Turns a full disk inside the block into the project's sentence naming `path`."""
    try:
        yield
    except Exception as err:  # noqa: BLE001 - only a full disk is translated; others re-raised
        if is_no_space(err):
            raise no_space_error(path) from err
        raise


def _move(source, target):
    if _is_remote(target):
        _gfile().rename(source, target, overwrite=True)
    else:
        os.replace(source, target)


def move_file(source, target):
    """Renames one file (local, or on a TensorFlow file system), replacing `target`."""
    _move(source, target)


def remove_file(path):
    """Deletes one file (local, or on a TensorFlow file system) if it exists."""
    _remove_if_present(path)


def exists(path):
    """True if a file or directory is at `path` (local, or on a TensorFlow file system)."""
    return _gfile().exists(path) if _is_remote(path) else os.path.lexists(path)


def _move_tree(source, target):
    """Renames a directory. Object stores (gs://) and TensorFlow's ram:// have no directory to
    rename, only files named by their paths: there each file is renamed, deepest paths
    included, so the tree appears under `target` file by file rather than at once."""
    if not _is_remote(target):
        os.replace(source, target)
        return
    gfile = _gfile()
    files, level = [], source.rstrip("/")
    # Level by level with glob: a file system listing by name prefix (ram://) walks wrongly.
    for _ in range(16):
        level += "/*"
        matches = gfile.glob(level)
        if not matches:
            break
        files += [p for p in matches if gfile.exists(p) and not gfile.isdir(p)]
    for path in sorted(set(files)):
        destination = target.rstrip("/") + path[len(source.rstrip("/")) :]
        gfile.makedirs(os.path.dirname(destination))
        _move(path, destination)


def require_free_space(directory, nbytes, path):
    """Raises the full-disk error for `path` unless `directory` has room for `nbytes` more.

    For writers that crash rather than raise when the disk fills up (h5py, through Keras'
    `save_weights`, dies in its `close`); remote file systems are not checked.

    Args:
        directory: an existing local directory the file goes to.
        nbytes: the least the file will take.
        path: the final path, named in the error.

    Raises:
        UserError: there is not enough room.
    """
    if _is_remote(directory):
        return
    free = shutil.disk_usage(directory).free
    if free < nbytes:
        raise no_space_error(path, f"{nbytes} bytes needed, {free} free")


@contextlib.contextmanager
def atomic_output(path):
    """Yields a temporary path beside `path`; renames it to `path` when the block succeeds.

    If the block raises, the temporary file is deleted and `path` is left as it was.

    Args:
        path: the final file.

    Yields:
        The temporary path to write.
    """
    temp = _temporary_name(path)
    try:
        with _full_disk_names(path):
            yield temp
            _move(temp, path)
    finally:
        _remove_if_present(temp)


@contextlib.contextmanager
def atomic_prefix(prefix, last_suffix=None):
    """Yields a temporary prefix; renames every `<temp>.*` file to `<prefix>.*` on success.

    Args:
        prefix: the final prefix, e.g. `out/bert_model.ckpt`.
        last_suffix: the file renamed last, e.g. ".index": a TensorFlow checkpoint becomes
            visible through its index, so its data files must be in place before it.

    Yields:
        The temporary prefix to write under.
    """
    temp = _temporary_name(prefix)
    try:
        with _full_disk_names(prefix):
            yield temp
        written = sorted(
            _matching(temp), key=lambda p: bool(last_suffix) and p.endswith(last_suffix)
        )
        for source in written:
            _move(source, prefix + source[len(temp) :])
    finally:
        for leftover in _matching(temp):
            _remove_if_present(leftover)


@contextlib.contextmanager
def atomic_directory(path, overwrite=False):
    """Yields a temporary directory beside `path`; renames it to `path` when the block succeeds.

    An existing `path` is replaced only with `overwrite` (it is moved aside first and deleted
    once the new tree is in place); if the block raises, the temporary tree is deleted and
    `path` is left as it was.

    Args:
        path: the final directory.
        overwrite: replace an existing `path`.

    Yields:
        The temporary directory to write (not yet created).

    Raises:
        FileExistsError: if `path` exists and `overwrite` is false.
    """
    exists = _gfile().exists if _is_remote(path) else os.path.lexists
    if exists(path) and not overwrite:
        raise FileExistsError(
            f"{path} already exists; pass --overwrite to replace it or choose another directory."
        )
    temp, old = _temporary_name(path), _temporary_name(path)
    try:
        with _full_disk_names(path):
            yield temp
        if exists(path):
            _move_tree(path, old)
        _move_tree(temp, path)
    finally:
        _remove_tree(temp)
        _remove_tree(old)


@contextlib.contextmanager
def open_atomically(path, mode="w"):
    """Opens a temporary file to write (text as UTF-8, or binary with "wb"); see `atomic_output`.

    Yields:
        The open file object.
    """
    with atomic_output(path) as temp:
        if _is_remote(temp):
            handle = _gfile().GFile(temp, mode)
        elif "b" in mode:
            handle = open(temp, mode)
        else:
            handle = open(temp, mode, encoding="utf-8")
        with handle:
            yield handle


def write_atomically(path, data):
    """Writes `data` (str as UTF-8, or bytes) as the whole content of `path`, atomically."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open_atomically(path, "wb") as handle:
        handle.write(data)


@contextlib.contextmanager
def local_path(path):
    """Yields `path`, or for a remote one (gs://...) a local temporary file copied there at
    the end: writers that seek back or take a path need a local file."""
    if not _is_remote(path):
        yield path
        return
    handle, temp = tempfile.mkstemp(suffix=os.path.basename(path))
    os.close(handle)
    try:
        yield temp
        _gfile().copy(temp, path, overwrite=True)
    finally:
        os.remove(temp)


def write_safetensors(path, tensors, metadata=None):
    """Writes `tensors` as the safetensors file `path`, atomically.

    The safetensors package's own writer, straight from the arrays' memory: every safetensors
    file of the project is written here.

    Args:
        path: the final file (local or remote).
        tensors: dict name -> C-contiguous np.ndarray.
        metadata: optional dict of strings for the header's `__metadata__`.
    """
    from safetensors.numpy import save_file  # only the writers of these files need it

    with atomic_output(path) as temp, local_path(temp) as local:
        save_file(tensors, local, metadata=metadata)
