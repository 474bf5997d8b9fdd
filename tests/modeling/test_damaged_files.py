"""Damaged and truncated model files (bert_config.json, model.safetensors, *.weights.h5, a
SavedModel): one sentence naming the file, saying it is damaged and what to do."""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import save_file

from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.formats import conversion
from modeling.formats.hf_import import read_safetensors
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.tiny_config import tiny_config, write_tiny_config

_CONFIG_FIX = "restore the bert_config.json that came with the checkpoint."


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is empty (damaged or truncated?): " + _CONFIG_FIX),
        (b'{"vocab_size": 99, "hidden_si', "is not valid JSON (line 1, column 20: Unterminated"),
        (b'{"vocab_size": 99, "hidden_act": "g\xe9lu"}', "is not UTF-8 text (byte 35)"),
        (
            b'{"hidden_size": 32}',
            'has no "vocab_size" (truncated or not a config?): ' + _CONFIG_FIX,
        ),
        (b'{"vocab_size": 99, "hidden_size": "32"}', ": hidden_size must be a positive integer"),
    ],
)
def test_damaged_bert_config(tmp_path, content, message):
    path = tmp_path / "bert_config.json"
    path.write_bytes(content)
    with pytest.raises(ValueError) as raised:
        BertConfig.from_json_file(str(path))
    assert str(raised.value).startswith(f"{path} {message}".replace(" :", ":")), raised.value


def test_run_classifier_names_a_truncated_config(tmp_path):
    write_tiny_config(tmp_path / "bert_config.json")
    text = (tmp_path / "bert_config.json").read_bytes()
    (tmp_path / "bert_config.json").write_bytes(text[: len(text) // 2])
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n")
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_classifier.py"),
            "--task_name=SST-2",
            f"--data_dir={tmp_path}",
            f"--vocab_file={tmp_path / 'vocab.txt'}",
            f"--bert_config_file={tmp_path / 'bert_config.json'}",
            f"--output_dir={tmp_path / 'out'}",
            "--do_train",
        ],
        timeout=300,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"run_classifier.py: error: {tmp_path / 'bert_config.json'} is not valid JSON"
    )
    assert last.endswith('such as {"vocab_size": 30522, "hidden_size": 768, ...}.'), last
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


@pytest.fixture
def safetensors_file(tmp_path):
    # Written by the safetensors package itself.
    path = tmp_path / "model.safetensors"
    save_file({"a": np.arange(64, dtype=np.float32), "b": np.ones([4, 4], np.float32)}, str(path))
    return path


def _safetensors_message(path, cut):
    data = path.read_bytes()
    path.write_bytes(data[:cut] if cut >= 0 else data[: len(data) + cut])
    with pytest.raises(ValueError) as raised:
        read_safetensors(str(path))
    return str(raised.value)


_HF_FIX = "download it again, or re-save the model with safe_serialization=True."


def test_truncated_safetensors_data(safetensors_file):
    message = _safetensors_message(safetensors_file, -10)
    assert message.startswith(f"{safetensors_file} is damaged or truncated (tensor ")
    assert message.endswith(f"bytes of data): {_HF_FIX}")


def test_truncated_safetensors_header(safetensors_file):
    assert _safetensors_message(safetensors_file, 40) == (
        f"{safetensors_file} is damaged or truncated (its header says "
        f"{int.from_bytes(safetensors_file.read_bytes()[:8], 'little')} bytes but the file has "
        f"40): {_HF_FIX}"
    )


def test_safetensors_too_short(safetensors_file):
    assert _safetensors_message(safetensors_file, 5) == (
        f"{safetensors_file} is damaged or truncated (only 5 bytes, not a safetensors file): "
        + _HF_FIX
    )


@pytest.fixture(scope="module")
def keras_dir(tmp_path_factory):
    """This project's keras format of a random tiny encoder."""
    config = tiny_config()
    model = BertModel(config)
    model(
        {
            "input_ids": np.zeros([1, 4], np.int32),
            "input_mask": np.ones([1, 4], np.int32),
            "segment_ids": np.zeros([1, 4], np.int32),
        }
    )
    arrays = tf1_checkpoint.variables_to_arrays(tf1_checkpoint.build_variable_map(bert_model=model))
    out = str(tmp_path_factory.mktemp("keras") / "model")
    conversion.write_weights(out, "keras", config, arrays)
    return out


def test_convert_checkpoint_names_a_truncated_keras_file(keras_dir, tmp_path):
    weights = os.path.join(keras_dir, conversion.KERAS_ENCODER_FILE)
    data = open(weights, "rb").read()
    open(weights, "wb").write(data[: len(data) // 2])
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "convert_checkpoint.py"),
            f"--input_checkpoint={keras_dir}",
            "--input_format=keras",
            f"--output_dir={tmp_path / 'out'}",
            "--output_format=tf1",
        ],
        timeout=300,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"convert_checkpoint.py: error: {weights} is damaged or truncated (Unable to synchronously "
        f"open file (truncated file: eof = {len(data) // 2}, sblock->base_addr = 0, stored_eof = "
        f"{len(data)})): convert the checkpoint to the keras format again."
    )
    assert not (tmp_path / "out").exists()


class _Module(tf.Module):
    def __init__(self):
        self.v = tf.Variable(np.arange(4096, dtype=np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def __call__(self, x):
        return x * self.v[0]


@pytest.mark.parametrize(
    "name, cut, reason",
    [
        ("saved_model.pb", 100, "Cannot parse file"),
        ("variables/variables.data-00000-of-00001", 1000, "Read less bytes than requested"),
        ("variables/variables.index", 10, "file is too short to be an sstable"),
    ],
)
def test_damaged_saved_model(tmp_path, name, cut, reason):
    export = str(tmp_path / "hub")
    tf.saved_model.save(_Module(), export)
    with open(os.path.join(export, name), "r+b") as f:
        f.truncate(cut)
    with pytest.raises(ValueError) as raised:
        conversion.read_weights(export, "tfhub")
    message = str(raised.value)
    assert message.startswith(f"{export} is a damaged or truncated SavedModel ({reason}"), message
    assert message.endswith("): export or download it again.")
