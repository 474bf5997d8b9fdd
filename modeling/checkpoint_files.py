"""Finding and reading checkpoint files: one resolver for every path a user gives, and a reader
that turns a damaged file into one sentence naming it.

* `resolve_checkpoint_path(path)`: a prefix (`.../bert_model.ckpt`), a prefix whose numbered
  variant exists (`.../bert_model.ckpt` when Model Garden's converter, told that path, wrote
  `bert_model.ckpt-1.*`), one of the checkpoint's own files (`....index`) or a folder (its
  `checkpoint` state file, else its one checkpoint) -> the prefix that is read.
* `open_checkpoint(prefix)`: a reader whose every failure on a truncated, garbage or missing file
  is a `DamagedCheckpointError` naming the file.
"""

import os
import re

import tensorflow as tf
from absl import logging

from fileio.errors import UserError, first_line

_NUMBERED = re.compile(r"-(\d+)$")
_OWN_FILE = re.compile(r"\.(index|data-\d+-of-\d+)$")
_EXAMPLE = (
    "pass the prefix of the checkpoint files, e.g. .../bert_model.ckpt for bert_model.ckpt.index "
    "and bert_model.ckpt.data-00000-of-00001"
)
# Prefixes already named in the log: callers resolve a path, then read the prefix they got.
_LOGGED = set()


class DamagedCheckpointError(UserError):
    """A checkpoint's files exist but cannot be read: truncated, garbage or partly missing."""


def _has_index(prefix):
    return tf.io.gfile.exists(prefix + ".index")


def _newest_numbered(base):
    """The `base-N` prefix with the highest N that has an index, or None."""
    found = []
    for index in tf.io.gfile.glob(base + "-*.index"):
        match = _NUMBERED.search(index[: -len(".index")])
        if match and index[: -len(".index")][: match.start()] == base:
            found.append((int(match.group(1)), index[: -len(".index")]))
    return max(found)[1] if found else None


def _in_folder(path):
    """The checkpoint a folder stands for, or None; raises when it holds several unrelated ones."""
    state = tf.train.get_checkpoint_state(path)
    if state and state.model_checkpoint_path:
        latest = state.model_checkpoint_path
        if not os.path.isabs(latest) and "://" not in latest:
            latest = os.path.join(path, latest)
        if _has_index(latest):
            return latest
    prefixes = sorted(p[: -len(".index")] for p in tf.io.gfile.glob(os.path.join(path, "*.index")))
    if len(prefixes) == 1:
        return prefixes[0]
    if os.path.join(path, "bert_model.ckpt") in prefixes:
        return os.path.join(path, "bert_model.ckpt")
    bases = {_NUMBERED.sub("", p) for p in prefixes}
    if len(bases) == 1 and all(_NUMBERED.search(p) for p in prefixes):
        # Numbered saves of one run (model.ckpt-N, ckpt-N) whose state file is gone.
        return _newest_numbered(bases.pop())
    if prefixes:
        raise UserError(
            f"Folder {path} holds several checkpoints and no 'checkpoint' state file naming one "
            f"({', '.join(os.path.basename(p) for p in prefixes)}): {_EXAMPLE}."
        )
    return None


def resolve_checkpoint_path(path, flag=None):
    """Turns what a user passes as a checkpoint into the prefix of the files to read.

    Accepted, in this order: a prefix with a `.index` file; one of the checkpoint's own files
    (`X.index`, `X.data-00000-of-00001`); a folder (the checkpoint its `checkpoint` state file
    names, else `bert_model.ckpt` or its only checkpoint, else the newest of its numbered ones);
    a prefix whose numbered variants `X-N` exist (the newest), as `tf.train.Checkpoint.save(X)`
    and Model Garden's converter write them. Logs the prefix read once per process.

    Args:
        path: the flag's value.
        flag: the flag's name (e.g. "--init_checkpoint"), for the messages; None names the
            path alone.

    Returns:
        The checkpoint prefix (its `.index` exists).

    Raises:
        UserError: nothing matches, naming the path and what was looked for.
    """
    if not path:
        raise UserError(f"No checkpoint path given{f' ({flag})' if flag else ''}: {_EXAMPLE}.")
    path = path.rstrip("/") or path
    shown = f"{flag}={path}" if flag else path
    prefix = None
    if _has_index(path):
        prefix = path
    elif _OWN_FILE.search(path) and _has_index(_OWN_FILE.sub("", path)):
        prefix = _OWN_FILE.sub("", path)
    elif tf.io.gfile.isdir(path):
        prefix = _in_folder(path)
        if prefix is None:
            raise UserError(
                f"No checkpoint found in folder {shown}: looked for a 'checkpoint' state file "
                f"and *.index files there; {_EXAMPLE}."
            )
    else:
        prefix = _newest_numbered(path)
    if prefix is None:
        raise UserError(
            f"Checkpoint not found: {shown} (looked for {path}.index, numbered ones "
            f"{path}-<N>.index and a folder {path}); {_EXAMPLE}."
        )
    if prefix not in _LOGGED:
        _LOGGED.add(prefix)
        given = "" if prefix == path else f" (for {path})"
        logging.info("Reading checkpoint %s%s", prefix, given)
    return prefix


def _data_files(prefix):
    found = sorted(tf.io.gfile.glob(prefix + ".data-*"))
    return ", ".join(found) if found else f"{prefix}.data-00000-of-00001"


def _is_missing(err):
    # The reader raises a bare OpError, not NotFoundError, for an absent data file.
    return isinstance(err, tf.errors.NotFoundError) or "No such file or directory" in str(err)


def _damaged(prefix, name, err):
    """The sentence for a tensor of `prefix` that could not be read."""
    if isinstance(err, IndexError):
        what = f"{_data_files(prefix)} is truncated (it ends before tensor {name})"
    elif _is_missing(err):
        named = re.search(re.escape(prefix) + r"\.data-\d+-of-\d+", str(err))
        what = f"{named.group(0) if named else _data_files(prefix)} is missing"
    else:
        what = f"{_data_files(prefix)} is damaged ({first_line(err)}; tensor {name})"
    return DamagedCheckpointError(
        f"{what}: checkpoint {prefix} cannot be read; restore its files from a good copy or "
        "write the checkpoint again."
    )


class CheckpointReader:
    """A checkpoint reader, with damaged files reported by name."""

    def __init__(self, prefix, reader):
        self.prefix, self._reader = prefix, reader

    def get_variable_to_shape_map(self):
        return self._reader.get_variable_to_shape_map()

    def get_variable_to_dtype_map(self):
        return self._reader.get_variable_to_dtype_map()

    def has_tensor(self, name):
        return self._reader.has_tensor(name)

    def get_tensor(self, name):
        """The tensor as an np.ndarray.

        Raises:
            UserError: the checkpoint has no tensor `name`.
            DamagedCheckpointError: its bytes are missing, cut short or fail their checksum.
        """
        if not self._reader.has_tensor(name):
            raise UserError(f"Checkpoint {self.prefix} holds no tensor {name}.")
        try:
            return self._reader.get_tensor(name)
        except (IndexError, tf.errors.OpError) as err:
            # IndexError: the reader's "Read less bytes than requested" on a truncated data file.
            raise _damaged(self.prefix, name, err) from err


def open_checkpoint(prefix):
    """Opens the checkpoint at `prefix` (see `resolve_checkpoint_path` for user paths).

    Returns:
        A `CheckpointReader`.

    Raises:
        DamagedCheckpointError: the `.index` file is truncated, not an index, or gone.
    """
    try:
        # The reader itself, not tf.train.load_checkpoint: its folder guess misreads file
        # systems that list by name prefix (ram://), where a prefix looks like a folder.
        return CheckpointReader(prefix, tf.compat.v1.train.NewCheckpointReader(prefix))
    except tf.errors.OpError as err:
        if _is_missing(err) and not _has_index(prefix):
            what = f"{prefix}.index is missing"
        else:
            what = f"{prefix}.index is damaged or truncated ({first_line(err)})"
        raise DamagedCheckpointError(
            f"{what}: checkpoint {prefix} cannot be read; restore its files from a good copy or "
            "write the checkpoint again."
        ) from err


def read_tensors(prefix, keep=lambda name: True):
    """Every tensor of the checkpoint at `prefix` whose name passes `keep`.

    Returns:
        dict name -> np.ndarray, read before anything is assigned, so a damaged file changes
        nothing.

    Raises:
        DamagedCheckpointError: any of its files cannot be read.
    """
    reader = open_checkpoint(prefix)
    return {
        name: reader.get_tensor(name)
        for name in sorted(reader.get_variable_to_shape_map())
        if keep(name)
    }
