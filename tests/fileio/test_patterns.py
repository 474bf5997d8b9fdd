"""The runners' --input_file expansion (fileio/patterns.py) against TensorFlow's own glob."""

import os

import pytest
import tensorflow as tf

from fileio.patterns import expand_file_patterns


@pytest.fixture()
def files(tmp_path):
    # Created out of name order, so the file system's listing order can differ from sorting.
    for name in ("zeta", "alpha", "mid", "beta"):
        (tmp_path / f"{name}.txt").write_text(name)
    (tmp_path / "sub").mkdir()
    return tmp_path


def test_original_order_is_tensorflows_glob(files):
    pattern = str(files / "*.txt")
    listed = expand_file_patterns(f"{pattern},{files / 'beta.txt'}", as_original=True)
    # The original's tf.gfile.Glob loop: each pattern in listing order, repeats kept.
    assert listed == tf.io.gfile.glob(pattern) + [str(files / "beta.txt")]


def test_default_is_sorted_without_repeats(files):
    listed = expand_file_patterns(f" {files / '*.txt'} ,{files / 'beta.txt'},")
    assert listed == [str(files / f"{n}.txt") for n in ("alpha", "beta", "mid", "zeta")]


@pytest.mark.parametrize(
    "pattern,message",
    [
        ("{d}/nothing*.txt", "--input_file: no file matches '{d}/nothing*.txt'"),
        ("{d}/s*", "--input_file: '{d}/sub' is a directory; pass a glob for the files in it"),
        (" , ", "--input_file is empty"),
    ],
)
def test_bad_patterns_are_clear_errors(files, pattern, message):
    with pytest.raises(ValueError) as err:
        expand_file_patterns(pattern.format(d=files))
    assert message.format(d=files) in str(err.value)


def test_flag_name_in_messages(files):
    with pytest.raises(ValueError, match="--train_file: no file matches"):
        expand_file_patterns(os.path.join(files, "x*"), flag="--train_file")
