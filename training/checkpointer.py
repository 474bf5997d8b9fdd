"""Training checkpoints in `output_dir`, in the original name-based layout.

`model.ckpt-<step>` holds what the original Estimator wrote: every weight under its original
name, the optimizer slots as `<name>/adam_m` and `<name>/adam_v`, and `global_step` (int64), so
the original code and every tool here can initialise from it. Extra training state that the
original had no name for (dropout seed state, the fp16 loss scale) is stored under
`_training_state/...`, which loaders of weights ignore.

Each save writes under a temporary name and renames; the `checkpoint` state file is replaced
last, so a crash during a save leaves the previous checkpoint as the latest one. A resume skips
a newest checkpoint whose files a crash left damaged and restores the newest readable one.
`StopRequest` turns SIGTERM/SIGINT into a request, checked between compiled calls, to save and
exit.
"""

import os
import re
import signal

import numpy as np
import tensorflow as tf
from absl import logging

from fileio.atomic import move_file, write_atomically
from fileio.errors import UserError
from modeling import tf1_checkpoint
from modeling.checkpoint_files import DamagedCheckpointError, open_checkpoint


def _write_state_file(output_dir, paths):
    lines = [f'model_checkpoint_path: "{os.path.basename(paths[-1])}"']
    lines += [f'all_model_checkpoint_paths: "{os.path.basename(p)}"' for p in paths]
    write_atomically(os.path.join(output_dir, "checkpoint"), "\n".join(lines) + "\n")


def list_checkpoints(output_dir):
    """Step-sorted `model.ckpt-<step>` prefixes that are complete (index present)."""
    found = []
    for index in tf.io.gfile.glob(os.path.join(output_dir, "model.ckpt-*.index")):
        match = re.search(r"model\.ckpt-(\d+)\.index$", index)
        if match:
            found.append((int(match.group(1)), index[: -len(".index")]))
    return [p for _, p in sorted(found)]


class TrainingCheckpointer:
    """Saves and restores weights, optimizer slots, step and extra state.

    Args:
        output_dir: where `model.ckpt-<step>` files go.
        variable_map: original name -> model variable.
        optimizer: an optimizer with `slot_variables(var)` and `iterations`.
        extra_state: name -> variable saved under `_training_state/`.
        keep: number of checkpoints to keep.
        writer: False on workers that must not write (multi-worker non-chief).
    """

    def __init__(self, output_dir, variable_map, optimizer, extra_state=None, keep=5, writer=True):
        self.output_dir = output_dir
        self.variable_map = variable_map
        self.optimizer = optimizer
        self.extra_state = dict(extra_state or {})
        self.keep = keep
        self.writer = writer

    def _all_variables(self):
        names = dict(self.variable_map)
        for name, var in self.variable_map.items():
            if var.trainable:
                for suffix, slot in self.optimizer.slot_variables(var).items():
                    names[f"{name}/{suffix}"] = slot
        for name, var in self.extra_state.items():
            names[tf1_checkpoint.TRAINING_STATE_PREFIX + name] = var
        return names

    def save(self, step):
        """Writes `model.ckpt-<step>` and makes it the latest; returns its prefix."""
        if not self.writer:
            return None
        arrays = {n: np.asarray(v.numpy()) for n, v in self._all_variables().items()}
        arrays["global_step"] = np.asarray(step, np.int64)
        prefix = os.path.join(self.output_dir, f"model.ckpt-{step}")
        tf1_checkpoint.save_tf1_checkpoint(arrays, prefix)
        paths = list_checkpoints(self.output_dir)
        _write_state_file(self.output_dir, paths[-self.keep :])
        for old in paths[: -self.keep]:
            # Only the checkpoint's own files: `<old>.damaged.*` (see `restore_latest`) stays.
            for path in tf.io.gfile.glob(old + ".index") + tf.io.gfile.glob(old + ".data-*"):
                tf.io.gfile.remove(path)
        logging.info("Saved checkpoint %s", prefix)
        return prefix

    def latest(self):
        """The newest complete checkpoint in output_dir, or None."""
        paths = list_checkpoints(self.output_dir) if tf.io.gfile.isdir(self.output_dir) else []
        return paths[-1] if paths else None

    def restore(self, prefix):
        """Restores everything `save` wrote; returns the step.

        Every tensor is read before any is assigned, so a damaged file changes nothing.

        Raises:
            DamagedCheckpointError: a file of the checkpoint is truncated, garbage or missing.
            ValueError: if a name is missing or has another shape (all listed at once).
        """
        reader = open_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        if "global_step" not in shapes:
            raise UserError(
                f"{prefix} holds no global_step, so it is no training checkpoint of this "
                "project: move it out of output_dir (pass it as --init_checkpoint instead)."
            )
        wanted = self._all_variables()
        arrays = {n: reader.get_tensor(n) for n in wanted if n in shapes}
        tf1_checkpoint.check_arrays_match(wanted, arrays, prefix, allow_missing=False)
        step = int(reader.get_tensor("global_step"))
        for name, var in wanted.items():
            # Keras variables name their dtype by a string, tf.Variables (the loss scale) by
            # a tf.DType, which numpy does not read.
            var.assign(arrays[name].astype(tf.as_dtype(var.dtype).as_numpy_dtype))
        self.optimizer.iterations.assign(step)
        logging.info("Resumed from %s at step %d", prefix, step)
        return step

    def restore_latest(self):
        """Restores the newest checkpoint in output_dir that can be read.

        A newer one that cannot be read (truncated or missing files, as a preempted machine's
        file system can leave them) is skipped with a WARNING naming it. The writer then renames
        its files to `<prefix>.damaged.*`, which nothing here reads or deletes, so that the save
        at its step neither overwrites them nor counts them among the checkpoints kept.

        Returns:
            The step restored, or None when output_dir holds no checkpoint.

        Raises:
            UserError: output_dir holds checkpoints, but none can be read.
            ValueError: the newest readable one does not match the model.
        """
        paths = list_checkpoints(self.output_dir) if tf.io.gfile.isdir(self.output_dir) else []
        for i in reversed(range(len(paths))):
            try:
                step = self.restore(paths[i])
            except DamagedCheckpointError as err:
                # The warnings are the listing of what was skipped and why.
                logging.warning("Skipping checkpoint %s, which cannot be read: %s", paths[i], err)
                continue
            if self.writer and i + 1 < len(paths):
                for damaged in paths[i + 1 :]:
                    _set_aside(damaged)
                _write_state_file(self.output_dir, paths[: i + 1][-self.keep :])
            return step
        if paths:
            raise UserError(
                f"No checkpoint in output_dir {self.output_dir} can be read to resume from (see "
                "the warnings above): restore the model.ckpt-* files from a good copy, or move "
                "them and the 'checkpoint' file out of it to start over."
            )
        return None


def _set_aside(prefix):
    """Renames the files of a damaged checkpoint to `<prefix>.damaged[-N].*`; returns that."""
    aside, n = prefix + ".damaged", 1
    while tf.io.gfile.glob(aside + ".*"):
        n += 1
        aside = f"{prefix}.damaged-{n}"
    for path in tf.io.gfile.glob(prefix + ".index") + tf.io.gfile.glob(prefix + ".data-*"):
        move_file(path, aside + path[len(prefix) :])
    logging.warning("Kept the files of the damaged checkpoint %s as %s.*", prefix, aside)
    return aside


class StopRequest:
    """Turns SIGTERM/SIGINT into a flag checked between compiled calls."""

    def __init__(self):
        self.requested, self.signum, self._old = False, 0, {}

    def _handle(self, signum, frame):
        self.requested, self.signum = True, signum

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


def export_original(variable_map, output_dir, config_json):
    """Writes `bert_model.ckpt` (the weights of `variable_map`, original name -> variable) and
    `bert_config.json` (`config_json`, a `BertConfig`) in `output_dir`; returns the prefix."""
    # Training state kept beside the weights (a distillation's projection) is no weight.
    weights = {n: v for n, v in variable_map.items() if not tf1_checkpoint.is_training_state(n)}
    arrays = tf1_checkpoint.variables_to_arrays(weights)
    prefix = tf1_checkpoint.save_tf1_checkpoint(arrays, f"{output_dir}/bert_model.ckpt")
    config_json.to_json_file(f"{output_dir}/bert_config.json")
    logging.info("Exported %s and bert_config.json", prefix)
    return prefix
