"""Checkpoint paths as other tools write them, and damaged checkpoint files, in one sentence."""

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from modeling import checkpoint_files, tf1_checkpoint
from modeling.checkpoint_files import DamagedCheckpointError, resolve_checkpoint_path

_EXAMPLE = (
    "pass the prefix of the checkpoint files, e.g. .../bert_model.ckpt for bert_model.ckpt.index "
    "and bert_model.ckpt.data-00000-of-00001."
)


def _tf_checkpoint(values=(1.0, 2.0, 3.0)):
    # Written by TensorFlow's own object-based writer, as Model Garden's converter saves.
    return tf.train.Checkpoint(v=tf.Variable(np.asarray(values, np.float32)))


def test_paths_resolve_as_tensorflow_and_model_garden_write_them(tmp_path, caplog):
    saved = tmp_path / "tf2"
    # Model Garden's converter, told --converted_checkpoint_path=.../bert_model.ckpt, calls
    # tf.train.Checkpoint.save on it: bert_model.ckpt-1.* plus a `checkpoint` state file.
    checkpoint = _tf_checkpoint()
    checkpoint.save(str(saved / "bert_model.ckpt"))
    checkpoint.save(str(saved / "bert_model.ckpt"))
    newest = str(saved / "bert_model.ckpt-2")
    caplog.set_level(logging.INFO, logger="absl")
    checkpoint_files._LOGGED.discard(newest)
    assert resolve_checkpoint_path(str(saved / "bert_model.ckpt")) == newest
    assert resolve_checkpoint_path(str(saved)) == newest  # the state file
    assert resolve_checkpoint_path(str(saved) + "/") == newest
    assert resolve_checkpoint_path(newest + ".index") == newest
    assert resolve_checkpoint_path(str(saved / "bert_model.ckpt-1")) == str(
        saved / "bert_model.ckpt-1"
    )
    # One INFO line names the prefix read, with the path it was found for.
    lines = [r.getMessage() for r in caplog.records if newest in r.getMessage()]
    assert lines == [f"Reading checkpoint {newest} (for {saved / 'bert_model.ckpt'})"]
    # Numbered saves without their state file: the newest.
    os.remove(saved / "checkpoint")
    assert resolve_checkpoint_path(str(saved)) == newest
    # A folder with one checkpoint, written with tf.train.Checkpoint.write (no number).
    _tf_checkpoint().write(str(tmp_path / "one" / "encoder"))
    assert resolve_checkpoint_path(str(tmp_path / "one")) == str(tmp_path / "one" / "encoder")


def test_paths_that_match_nothing_say_what_was_looked_for(tmp_path):
    missing = str(tmp_path / "nope" / "bert_model.ckpt")
    with pytest.raises(ValueError) as err:
        resolve_checkpoint_path(missing)
    assert str(err.value) == (
        f"Checkpoint not found: {missing} (looked for {missing}.index, numbered ones "
        f"{missing}-<N>.index and a folder {missing}); {_EXAMPLE}"
    )
    with pytest.raises(ValueError) as err:
        resolve_checkpoint_path(str(tmp_path))
    assert str(err.value) == (
        f"No checkpoint found in folder {tmp_path}: looked for a 'checkpoint' state file and "
        f"*.index files there; {_EXAMPLE}"
    )
    _tf_checkpoint().write(str(tmp_path / "a"))
    _tf_checkpoint().write(str(tmp_path / "b"))
    with pytest.raises(ValueError) as err:
        resolve_checkpoint_path(str(tmp_path))
    assert str(err.value) == (
        f"Folder {tmp_path} holds several checkpoints and no 'checkpoint' state file naming one "
        f"(a, b): {_EXAMPLE}"
    )


def _cut(path, fraction):
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: int(len(data) * fraction)])


def _tf1_checkpoint(prefix):
    """A name-based checkpoint written by TensorFlow's TF1 Saver, as the original's scripts."""
    with tf.Graph().as_default():
        tf.compat.v1.get_variable(
            "bert/embeddings/word_embeddings", initializer=np.ones([64, 64], np.float32)
        )
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(session, prefix, write_meta_graph=False)


_FIX = "restore its files from a good copy or write the checkpoint again."


@pytest.mark.parametrize(
    "damage,message",
    [
        (
            lambda p: _cut(p + ".data-00000-of-00001", 0.5),
            "{p}.data-00000-of-00001 is truncated (it ends before tensor bert/"
            "embeddings/word_embeddings): checkpoint {p} cannot be read; " + _FIX,
        ),
        (
            lambda p: os.remove(p + ".data-00000-of-00001"),
            "{p}.data-00000-of-00001 is missing: checkpoint {p} cannot be read; " + _FIX,
        ),
        (
            lambda p: _cut(p + ".index", 0.5),
            "{p}.index is damaged or truncated (not an sstable (bad magic number)): checkpoint "
            "{p} cannot be read; " + _FIX,
        ),
        (
            lambda p: open(p + ".index", "wb").write(b"\0"),
            "{p}.index is damaged or truncated (file is too short to be an sstable): checkpoint "
            "{p} cannot be read; " + _FIX,
        ),
    ],
    ids=["truncated_data", "missing_data", "truncated_index", "garbage_index"],
)
def test_damaged_checkpoint_is_one_sentence_naming_the_file(tmp_path, damage, message):
    prefix = str(tmp_path / "bert_model.ckpt")
    _tf1_checkpoint(prefix)
    damage(prefix)
    with pytest.raises(DamagedCheckpointError) as err:
        tf1_checkpoint.read_checkpoint(prefix)
    assert str(err.value) == message.format(p=prefix)
