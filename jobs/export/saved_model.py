"""An export's folder: refused before any work if it exists, and a SavedModel saved into it."""

import os

import tensorflow as tf
from absl import logging

from fileio.atomic import atomic_directory


def refuse_existing(flag, path, overwrite):
    """Refuses to write over `path` unless `overwrite`: checked before any work, since
    building and saving a large model takes minutes.

    Args:
        flag: the flag that gave `path`, e.g. "export_dir", for the message.
        path: the export's folder, or None when none is written.
        overwrite: --overwrite.

    Raises:
        FileExistsError: `path` exists and `overwrite` is false.
    """
    if path and tf.io.gfile.exists(path) and not overwrite:
        raise FileExistsError(
            f"--{flag} {path} already exists; pass --overwrite to replace it or choose "
            "another directory."
        )


def write_saved_model(export_dir, overwrite, root, signatures=None, add_files=None):
    """Saves `root` as the SavedModel `export_dir`, atomically (its parent made if needed).

    Args:
        export_dir: the SavedModel's folder.
        overwrite: replace an existing `export_dir`.
        root: the trackable object saved.
        signatures: its serving signatures, or None for the object's own functions.
        add_files: a function of the folder being written that adds files beside the
            SavedModel before it is moved into place, or None.
    """
    parent = os.path.dirname(export_dir.rstrip("/"))
    if parent:
        tf.io.gfile.makedirs(parent)
    with atomic_directory(export_dir, overwrite=overwrite) as temp:
        tf.saved_model.save(root, temp, signatures=signatures)
        if add_files is not None:
            add_files(temp)
    logging.info("Wrote %s", export_dir)
