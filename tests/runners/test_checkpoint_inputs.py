"""Checkpoints given to the command-line tools: a damaged one ends the command in one sentence
naming the file, a numbered prefix (as TensorFlow's savers write it) is found, and a fine-tuning
runner refuses an --init_checkpoint that is absent or of another model before it writes."""

import json
import os
import shutil
import sys

import pytest

from tests.helpers.glue_tasks import write_sst2
from tests.helpers.paths import TESTDATA
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.squad_tasks import write_squad

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


def _fine_tuning_inputs(runner, tmp_path):
    """The data flags of one short training run of `runner` (fine-tuning runners)."""
    if runner == "run_classifier.py":
        write_sst2(tmp_path / "sst2", num_train=8, num_dev=4, num_test=4)
        return ["--task_name=SST-2", f"--data_dir={tmp_path / 'sst2'}"]
    if runner == "run_ner.py":
        return [f"--data_dir={os.path.join(TESTDATA, 'conll2003')}", "--doc_stride=8"]
    write_squad(tmp_path / "train.json", num_paragraphs=2, seed=0)
    return [f"--train_file={tmp_path / 'train.json'}", "--doc_stride=8", "--max_query_length=8"]


@pytest.mark.parametrize(
    "runner,case",
    [
        ("run_classifier.py", "absent"),
        ("run_classifier.py", "other_config"),
        ("run_ner.py", "other_config"),
        ("run_squad.py", "absent"),
    ],
)
def test_a_wrong_init_checkpoint_is_refused_before_anything_is_written(
    original_gelu, tmp_path, runner, case
):
    """Not after train.tf_record: a path with no checkpoint, or a checkpoint whose weights
    another config describes (its index read, not its weights), ends the run before
    --output_dir exists."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]) + "\n")
    config = original_gelu["config"]
    checkpoint = original_gelu["ckpt"]
    if case == "absent":
        checkpoint = str(tmp_path / "nowhere" / "bert_model.ckpt")
    else:
        # The checkpoint's model with 16-wide layers instead of 32: every encoder weight
        # disagrees.
        config = tmp_path / "bert_config.json"
        settings = json.loads(open(original_gelu["config"]).read())
        config.write_text(json.dumps({**settings, "hidden_size": 16}))
    out = tmp_path / "out"
    result = _tool(
        runner,
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        f"--init_checkpoint={checkpoint}",
        "--max_seq_length=16",
        "--do_train",
        f"--output_dir={out}",
        *_fine_tuning_inputs(runner, tmp_path),
    )
    assert result.returncode == 1, result.stderr[-3000:]
    last = _last_line(result)
    if case == "absent":
        assert last.startswith(
            f"{runner}: error: Checkpoint not found: --init_checkpoint={checkpoint} (looked for "
            f"{checkpoint}.index"
        ), last
        assert "pass the prefix of the checkpoint files" in last
    else:
        assert last.startswith(
            f"{runner}: error: --init_checkpoint={checkpoint} does not fit "
            f"--bert_config_file={config} (bert/embeddings/LayerNorm/beta is [32] where the "
            "config's model has [16]; "
        ), last
        assert last.endswith(
            " more): pass the bert_config.json that came with the checkpoint, or a checkpoint "
            "of the model it describes."
        ), last
    assert not out.exists()


def test_a_resumed_run_does_not_read_its_init_checkpoint(original_gelu, tmp_path):
    """A run that resumes from its own model.ckpt-N never reads --init_checkpoint, so a
    checkpoint deleted since the first start does not stop it."""
    from types import SimpleNamespace

    from command_line.init_checkpoint import check_init_checkpoint
    from fileio.errors import UserError
    from modeling.config import BertConfig

    config = BertConfig.from_json_file(original_gelu["config"])
    flag_values = SimpleNamespace(
        init_checkpoint=str(tmp_path / "deleted" / "bert_model.ckpt"),
        output_dir=str(tmp_path / "out"),
        bert_config_file=original_gelu["config"],
    )
    with pytest.raises(UserError, match="^Checkpoint not found: --init_checkpoint="):
        check_init_checkpoint(flag_values, config)
    _copy(original_gelu, tmp_path / "out", "model.ckpt-3")
    assert check_init_checkpoint(flag_values, config) is None
