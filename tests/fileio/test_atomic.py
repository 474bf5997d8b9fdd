"""The one atomic writer (fileio/atomic.py): complete files or none, nothing left behind."""

import os

import pytest

from fileio.atomic import atomic_output, atomic_prefix, open_atomically, write_atomically


class _Interrupted(Exception):
    pass


def test_write_replaces_the_file_only_when_complete(tmp_path):
    path = str(tmp_path / "out.txt")
    write_atomically(path, "first\n")
    write_atomically(path, b"second\n")
    assert open(path, "rb").read() == b"second\n"
    with pytest.raises(_Interrupted), open_atomically(path) as handle:
        handle.write("half of a thi")
        raise _Interrupted
    assert open(path, "rb").read() == b"second\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_text_is_utf8_whatever_the_locale(tmp_path):
    path = str(tmp_path / "out.txt")
    with open_atomically(path) as handle:
        handle.write("caf\u00e9 \u4e2d\n")
    assert open(path, "rb").read() == "caf\u00e9 \u4e2d\n".encode()


def test_atomic_output_keeps_the_suffix_and_cleans_up(tmp_path):
    path = str(tmp_path / "model.weights.h5")
    with atomic_output(path) as temp:
        # Writers such as Keras insist on the final name's suffix.
        assert temp.endswith(".weights.h5") and os.path.dirname(temp) == str(tmp_path)
        assert not os.path.exists(path)
        open(temp, "wb").write(b"x")
    assert os.listdir(tmp_path) == ["model.weights.h5"]
    with pytest.raises(_Interrupted), atomic_output(path) as temp:
        open(temp, "wb").write(b"partial")
        raise _Interrupted
    assert open(path, "rb").read() == b"x" and os.listdir(tmp_path) == ["model.weights.h5"]


def test_prefix_renames_every_file_and_the_last_one_last(tmp_path, monkeypatch):
    prefix = str(tmp_path / "bert_model.ckpt")
    moves = []
    real_replace = os.replace

    def recording_replace(source, target):
        moves.append(os.path.basename(target))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", recording_replace)
    with atomic_prefix(prefix, last_suffix=".index") as temp:
        for suffix in (".index", ".data-00000-of-00002", ".data-00001-of-00002"):
            open(temp + suffix, "wb").write(suffix.encode())
    assert moves[-1] == "bert_model.ckpt.index" and len(moves) == 3
    assert sorted(os.listdir(tmp_path)) == [
        "bert_model.ckpt.data-00000-of-00002",
        "bert_model.ckpt.data-00001-of-00002",
        "bert_model.ckpt.index",
    ]
    assert open(prefix + ".index", "rb").read() == b".index"


def test_prefix_interrupted_leaves_nothing(tmp_path):
    prefix = str(tmp_path / "model.ckpt-5")
    with pytest.raises(_Interrupted), atomic_prefix(prefix, last_suffix=".index") as temp:
        open(temp + ".data-00000-of-00001", "wb").write(b"half")
        raise _Interrupted
    assert os.listdir(tmp_path) == []


def test_safetensors_file_by_the_library_and_atomic(tmp_path, monkeypatch):
    import numpy as np
    import safetensors.numpy

    from fileio import atomic

    path = str(tmp_path / "model.safetensors")
    tensors = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.ones(4, np.int64)}
    atomic.write_safetensors(path, tensors, metadata={"format": "pt"})
    assert open(path, "rb").read() == safetensors.numpy.save(tensors, metadata={"format": "pt"})
    assert os.listdir(tmp_path) == ["model.safetensors"]

    def fail(*args, **kwargs):
        raise _Interrupted

    monkeypatch.setattr(safetensors.numpy, "save_file", fail)
    with pytest.raises(_Interrupted):
        atomic.write_safetensors(path, {"c": np.zeros(2, np.float32)})
    assert safetensors.numpy.load_file(path).keys() == {"a", "b"}
    assert os.listdir(tmp_path) == ["model.safetensors"]
