"""A damaged or truncated TFRecord file in the middle of reading: one sentence naming the file
and where in it the damage is, instead of TensorFlow's op trace."""

import os
import struct
import sys

import pytest

from data.glue.features import ClassifierFeatures
from data.glue.records import classifier_dataset, write_classifier_tfrecord
from data.records.input_pipeline import damaged_records_error
from jobs.fine_tuning import reading_own_records
from tests.helpers.pretraining_records import write_records
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.tiny_config import write_tiny_config


def _record_starts(path):
    """Byte offsets of the records of `path` (TFRecord framing: length u64, crc u32, data,
    crc u32)."""
    data, starts, position = open(path, "rb").read(), [], 0
    while position < len(data):
        starts.append(position)
        position += 16 + struct.unpack("<Q", data[position : position + 8])[0]
    return starts


def _flip_byte(path, record):
    """Flips a byte inside the data of `record`; returns its data's offset."""
    offset = _record_starts(path)[record] + 12 + 3
    data = bytearray(open(path, "rb").read())
    data[offset] ^= 0xFF
    open(path, "wb").write(bytes(data))
    return _record_starts(path)[record] + 12


def _truncate_inside(path, record):
    """Cuts `path` in the middle of `record`'s data; returns the record's offset."""
    start = _record_starts(path)[record]
    with open(path, "r+b") as f:
        f.truncate(start + 20)
    return start


@pytest.fixture
def two_files(tmp_path):
    paths = [str(tmp_path / f"part-{i}.tfrecord") for i in range(2)]
    for seed, path in enumerate(paths):
        write_records(path, num_examples=40, seed=seed)
    return paths


def test_the_damaged_file_and_record_are_named(two_files):
    offset = _flip_byte(two_files[1], 25)
    message = str(damaged_records_error(two_files, None, "write it again"))
    assert message == (
        f"{two_files[1]} is damaged: the record at byte {offset} (after record 25) is "
        "corrupted; write it again."
    )


def test_a_truncated_file_is_named(two_files):
    offset = _truncate_inside(two_files[0], 31)
    message = str(damaged_records_error(two_files, None, "write it again"))
    assert message == (
        f"{two_files[0]} is truncated: the record at byte {offset} (after record 31) is cut "
        "short; write it again."
    )


def test_run_pretraining_names_the_damaged_input(tmp_path, two_files):
    offset = _flip_byte(two_files[1], 20)
    write_tiny_config(tmp_path / "bert_config.json")
    out = tmp_path / "out"
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_pretraining.py"),
            f"--input_file={tmp_path / 'part-*.tfrecord'}",
            f"--output_dir={out}",
            f"--bert_config_file={tmp_path / 'bert_config.json'}",
            "--do_train",
            "--train_batch_size=8",
            "--max_seq_length=32",
            "--max_predictions_per_seq=5",
            "--num_train_steps=12",
            "--num_warmup_steps=1",
            "--save_checkpoints_steps=1000",
        ],
        timeout=300,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"run_pretraining.py: error: {two_files[1]} is damaged: the record at byte {offset} "
        "(after record 20) is corrupted; write it again with create_pretraining_data.py, or "
        "leave it out of --input_file."
    )
    assert not [f for f in os.listdir(out) if f.startswith(("model.ckpt", "bert_model"))]


def test_a_fine_tuning_run_names_its_own_damaged_records(tmp_path):
    path = str(tmp_path / "eval.tf_record")
    features = [ClassifierFeatures([i, i, i], [1] * 3, [0] * 3, i % 2, True) for i in range(30)]
    write_classifier_tfrecord(features, path)
    offset = _flip_byte(path, 17)
    with pytest.raises(ValueError) as raised, reading_own_records(path):
        for _ in classifier_dataset(path, 3, False, 8, False):
            pass
    assert str(raised.value) == (
        f"{path} is damaged: the record at byte {offset} (after record 17) is corrupted; run the "
        "command again to write it anew, and check the disk if it happens again."
    )
