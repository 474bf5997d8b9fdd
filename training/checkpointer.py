"""Training checkpoints in `output_dir`, in the original name-based layout.

`model.ckpt-<step>` holds what the original Estimator wrote: every weight under its original
name, the optimizer slots as `<name>/adam_m` and `<name>/adam_v`, and `global_step` (int64), so
the original code and every tool here can initialise from it. Extra training state that the
original had no name for (dropout seed state, the fp16 loss scale) is stored under
`_training_state/...`, which loaders of weights ignore.

Each save writes under a temporary name and renames; the `checkpoint` state file is replaced
last, so a crash during a save leaves the previous checkpoint as the latest one.
`StopRequest` turns SIGTERM/SIGINT into a request, checked between compiled calls, to save and
exit.
"""

import os
import re
import signal

import numpy as np
import tensorflow as tf
from absl import logging

from fileio.atomic import write_atomically
from modeling import tf1_checkpoint


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
            for path in tf.io.gfile.glob(old + ".*"):
                tf.io.gfile.remove(path)
        logging.info("Saved checkpoint %s", prefix)
        return prefix

    def latest(self):
        """The newest complete checkpoint in output_dir, or None."""
        paths = list_checkpoints(self.output_dir) if tf.io.gfile.isdir(self.output_dir) else []
        return paths[-1] if paths else None

    def restore(self, prefix):
        """Restores everything `save` wrote; returns the step.

        Raises:
            ValueError: if a name is missing or has another shape (all listed at once).
        """
        reader = tf1_checkpoint.checkpoint_reader(prefix)
        shapes = reader.get_variable_to_shape_map()
        wanted = self._all_variables()
        arrays = {n: reader.get_tensor(n) for n in wanted if n in shapes}
        tf1_checkpoint.check_arrays_match(wanted, arrays, prefix, allow_missing=False)
        for name, var in wanted.items():
            # Keras variables name their dtype by a string, tf.Variables (the loss scale) by
            # a tf.DType, which numpy does not read.
            var.assign(arrays[name].astype(tf.as_dtype(var.dtype).as_numpy_dtype))
        step = int(reader.get_tensor("global_step"))
        self.optimizer.iterations.assign(step)
        logging.info("Resumed from %s at step %d", prefix, step)
        return step


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
