"""Checkpoints given to the command-line tools: a damaged one ends the command in one sentence
naming the file, and a numbered prefix (as TensorFlow's savers write it) is found."""

import os
import shutil
import sys

from tests.helpers.scripts import REPO, run_in_repo

_FIX = "restore its files from a good copy or write the checkpoint again."


def _copy(original_gelu, target, name="bert_model.ckpt"):
    """The original's checkpoint and config under `target/name`; returns the prefix."""
    os.makedirs(target)
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(original_gelu["ckpt"] + suffix, target / (name + suffix))
    shutil.copy(original_gelu["config"], target / "bert_config.json")
    return str(target / name)


def _cut(path, fraction=0.5):
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: int(len(data) * fraction)])


def _tool(name, *args):
    return run_in_repo([sys.executable, os.path.join(REPO, name), *map(str, args)], timeout=300)


def _last_line(result):
    return result.stderr.strip().splitlines()[-1]


def test_convert_checkpoint_names_a_truncated_index(original_gelu, tmp_path):
    prefix = _copy(original_gelu, tmp_path / "in")
    _cut(prefix + ".index")
    result = _tool(
        "convert_checkpoint.py",
        f"--input_checkpoint={prefix}",
        "--input_format=tf1",
        f"--output_dir={tmp_path / 'out'}",
        "--output_format=hf",
    )
    assert result.returncode == 1
    assert _last_line(result) == (
        f"convert_checkpoint.py: error: {prefix}.index is damaged or truncated (not an sstable "
        f"(bad magic number)): checkpoint {prefix} cannot be read; " + _FIX
    )
    assert not os.path.exists(tmp_path / "out")


def test_export_model_names_a_missing_data_file(original_gelu, tmp_path):
    prefix = _copy(original_gelu, tmp_path / "in")
    os.remove(prefix + ".data-00000-of-00001")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]) + "\n")
    result = _tool(
        "export_model.py",
        "--task=encoder",
        f"--checkpoint={tmp_path / 'in'}",  # a folder: its one checkpoint
        f"--bert_config_file={original_gelu['config']}",
        f"--vocab_file={vocab}",
        f"--export_dir={tmp_path / 'export'}",
    )
    assert result.returncode == 1
    assert _last_line(result) == (
        f"export_model.py: error: {prefix}.data-00000-of-00001 is missing: checkpoint {prefix} "
        "cannot be read; " + _FIX
    )
    assert f"Reading checkpoint {prefix} (for {tmp_path / 'in'})" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["in", "vocab.txt"]


def _extract(original_gelu, tmp_path, checkpoint):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]) + "\n")
    (tmp_path / "input.txt").write_text("a a\n")
    return _tool(
        "extract_features.py",
        f"--input_file={tmp_path / 'input.txt'}",
        f"--output_file={tmp_path / 'out.jsonl'}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={original_gelu['config']}",
        f"--init_checkpoint={checkpoint}",
        "--max_seq_length=8",
        "--layers=-1",
    )


def test_extract_features_names_a_truncated_data_file(original_gelu, tmp_path):
    prefix = _copy(original_gelu, tmp_path / "in")
    _cut(prefix + ".data-00000-of-00001")
    result = _extract(original_gelu, tmp_path, prefix)
    assert result.returncode == 1
    last = _last_line(result)
    assert last.startswith(
        f"extract_features.py: error: {prefix}.data-00000-of-00001 is truncated (it ends before "
        "tensor "
    )
    assert last.endswith(f"): checkpoint {prefix} cannot be read; " + _FIX)
    assert sorted(os.listdir(tmp_path)) == ["in", "input.txt", "vocab.txt"]


def test_init_checkpoint_finds_the_numbered_save(original_gelu, tmp_path):
    # bert_model.ckpt-7, as TensorFlow's savers name a save at step 7 of .../bert_model.ckpt.
    prefix = _copy(original_gelu, tmp_path / "in", "bert_model.ckpt-7")
    given = str(tmp_path / "in" / "bert_model.ckpt")
    result = _extract(original_gelu, tmp_path, given)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Reading checkpoint {prefix} (for {given})" in result.stderr
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 1
