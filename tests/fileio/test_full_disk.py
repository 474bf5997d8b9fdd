"""A full disk wherever a command writes: the project's sentence naming the final path, and
nothing left on the disk (temporary files removed, no half-written file under a final name).

The disk is a real tmpfs too small for the output (tests/helpers/full_disk.py); the inputs live
elsewhere.
"""

import os
import sys

import pytest

from tests.helpers.full_disk import assert_no_space, full_disk  # noqa: F401 - the fixture
from tests.helpers.glue_tasks import write_sst2
from tests.helpers.pretraining_records import write_records
from tests.helpers.scripts import REPO
from tests.helpers.tiny_config import write_tiny_config

_WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away", "and", "back"]


def _write_vocab(path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *_WORDS]
    tokens += [f"##{w}" for w in _WORDS]
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")


def _write_corpus(path, documents=40):
    lines = []
    for d in range(documents):
        for s in range(6):
            lines.append(" ".join(_WORDS[(d + s + i) % len(_WORDS)] for i in range(8)) + " .")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def _outputs(disk):
    """The files left on `disk` but TensorBoard's event logs, which grow as training runs (a
    reader takes a log cut short as it stands), and the run's `flags.txt`, written whole
    (atomically) before training starts."""
    return [
        f
        for f in disk.files_left()
        if ".tfevents." not in os.path.basename(f) and os.path.basename(f) != "flags.txt"
    ]


@pytest.fixture
def text_inputs(tmp_path):
    _write_vocab(tmp_path / "vocab.txt")
    _write_corpus(tmp_path / "corpus.txt")
    return tmp_path


@pytest.mark.parametrize("workers", ["0", "2"])
def test_create_pretraining_data(full_disk, text_inputs, workers):  # noqa: F811
    output = os.path.join(full_disk.path, "examples.tfrecord")
    result = full_disk.run(
        [
            sys.executable,
            os.path.join(REPO, "create_pretraining_data.py"),
            f"--input_file={text_inputs / 'corpus.txt'}",
            f"--output_file={output}",
            f"--vocab_file={text_inputs / 'vocab.txt'}",
            "--dupe_factor=20",
            "--max_seq_length=64",
            "--max_predictions_per_seq=10",
            f"--num_workers={workers}",
        ]
    )
    assert_no_space(result, output)
    assert full_disk.files_left() == []


def test_build_vocab(full_disk, text_inputs):  # noqa: F811
    full_disk.size = "4k"
    output = os.path.join(full_disk.path, "vocab.txt")
    result = full_disk.run(
        [
            sys.executable,
            os.path.join(REPO, "build_vocab.py"),
            f"--input_file={text_inputs / 'corpus.txt'}",
            f"--output_file={output}",
            "--vocab_size=2000",
        ]
    )
    assert_no_space(result, output)
    assert full_disk.files_left() == []


@pytest.fixture
def pretraining_inputs(tmp_path):
    write_records(tmp_path / "data.tfrecord", num_examples=16)
    write_tiny_config(tmp_path / "bert_config.json")
    return tmp_path


@pytest.mark.slow
def test_run_pretraining_checkpoint(full_disk, pretraining_inputs):  # noqa: F811
    out = os.path.join(full_disk.path, "out")
    result = full_disk.run(
        [
            sys.executable,
            os.path.join(REPO, "run_pretraining.py"),
            f"--input_file={pretraining_inputs / 'data.tfrecord'}",
            f"--output_dir={out}",
            f"--bert_config_file={pretraining_inputs / 'bert_config.json'}",
            "--do_train",
            "--train_batch_size=8",
            "--max_seq_length=32",
            "--max_predictions_per_seq=5",
            "--num_train_steps=2",
            "--num_warmup_steps=1",
        ]
    )
    assert_no_space(result, os.path.join(out, "model.ckpt-2"))
    assert _outputs(full_disk) == []


def test_run_classifier_records(full_disk, text_inputs):  # noqa: F811
    full_disk.size = "4k"
    write_sst2(text_inputs / "data", num_train=64, num_dev=8, num_test=8)
    write_tiny_config(text_inputs / "bert_config.json")
    out = os.path.join(full_disk.path, "out")
    result = full_disk.run(
        [
            sys.executable,
            os.path.join(REPO, "run_classifier.py"),
            "--task_name=SST-2",
            f"--data_dir={text_inputs / 'data'}",
            f"--vocab_file={text_inputs / 'vocab.txt'}",
            f"--bert_config_file={text_inputs / 'bert_config.json'}",
            "--max_seq_length=32",
            f"--output_dir={out}",
            "--do_train",
        ]
    )
    assert_no_space(result, os.path.join(out, "train.tf_record"))
    assert _outputs(full_disk) == []


@pytest.mark.slow
def test_extract_features_json(full_disk, text_inputs, original_relu):  # noqa: F811
    full_disk.size = "4k"
    (text_inputs / "input.txt").write_text("the cat sat on a mat .\na dog ran far away .\n")
    output = os.path.join(full_disk.path, "features.jsonl")
    result = full_disk.run(
        [
            sys.executable,
            os.path.join(REPO, "extract_features.py"),
            f"--input_file={text_inputs / 'input.txt'}",
            f"--output_file={output}",
            f"--vocab_file={text_inputs / 'vocab.txt'}",
            f"--bert_config_file={original_relu['config']}",
            f"--init_checkpoint={original_relu['ckpt']}",
            "--max_seq_length=16",
            "--layers=-1,-2,-3",
        ]
    )
    assert_no_space(result, output)
    assert full_disk.files_left() == []


def test_convert_checkpoint(full_disk, original_relu):  # noqa: F811
    out = os.path.join(full_disk.path, "keras")
    result = full_disk.run(
        [
            sys.executable,
            os.path.join(REPO, "convert_checkpoint.py"),
            f"--input_checkpoint={original_relu['ckpt']}",
            "--input_format=tf1",
            f"--output_dir={out}",
            "--output_format=keras",
        ]
    )
    assert_no_space(result, out)
    assert full_disk.files_left() == []


def test_export_model(full_disk, text_inputs, original_relu):  # noqa: F811
    export = os.path.join(full_disk.path, "export")
    result = full_disk.run(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            "--task=encoder",
            f"--checkpoint={original_relu['ckpt']}",
            f"--bert_config_file={original_relu['config']}",
            f"--vocab_file={text_inputs / 'vocab.txt'}",
            f"--export_dir={export}",
        ]
    )
    assert_no_space(result, export)
    assert full_disk.files_left() == []
