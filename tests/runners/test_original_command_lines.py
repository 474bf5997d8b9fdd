"""The original's command lines with the settings users commonly pick run, as they ran there:
a --doc_stride as long as its window is accepted with one warning, and a project default never
refuses (or warns about) a legal --max_seq_length."""

import json
import os
import sys

from tests.helpers.paths import TESTDATA
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.tiny_config import write_tiny_config

VOCAB = os.path.join(TESTDATA, "glue", "vocab.txt")
CONLL = os.path.join(TESTDATA, "conll2003")


def _config(tmp_path):
    path = tmp_path / "bert_config.json"
    write_tiny_config(path, vocab_size=186, max_position_embeddings=128)
    return path


def _run(program, *args):
    return run_in_repo([sys.executable, os.path.join(REPO, program), *args], timeout=600)


def _warnings(stderr):
    return [line for line in stderr.splitlines() if line.startswith("W")]


def test_run_squad_at_128_with_the_default_stride(tmp_path):
    """`run_squad.py --max_seq_length=128` keeps --doc_stride=128 and --max_query_length=64:
    the warning names the window of the longest question (61 pieces); a 2-piece question
    leaves 123, so the 210-piece context is cut, as the original cuts it, into 2 adjacent
    windows (0-122, 123-209)."""
    context = " ".join(["the cat sat on the mat ."] * 30)
    start = context.index("mat")
    qa = {"id": "q1", "question": "where ?", "answers": [{"text": "mat", "answer_start": start}]}
    squad = {"data": [{"title": "t", "paragraphs": [{"context": context, "qas": [qa]}]}]}
    (tmp_path / "train.json").write_text(json.dumps(squad))
    out = tmp_path / "out"
    result = _run(
        "run_squad.py",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={_config(tmp_path)}",
        f"--train_file={tmp_path / 'train.json'}",
        f"--predict_file={tmp_path / 'train.json'}",
        "--do_train=True",
        "--do_predict=True",
        "--train_batch_size=4",
        "--num_train_epochs=1.0",
        "--max_seq_length=128",
        f"--output_dir={out}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    stride_warnings = [w for w in _warnings(result.stderr) if "--doc_stride" in w]
    assert len(stride_warnings) == 1
    assert stride_warnings[0].endswith(
        "--doc_stride=128 is not smaller than the window it strides (61 document pieces = "
        "128 - 64 - 3): consecutive windows are adjacent and share no context, so the pieces at "
        "their edges are read without what follows or precedes them; pass --doc_stride=30 (half "
        "the window) for overlap."
    )
    assert "Num split examples = 2" in result.stderr
    predictions = json.loads((out / "predictions.json").read_text())
    assert list(predictions) == ["q1"]


def test_run_ner_at_64_with_the_default_stride(tmp_path):
    """`run_ner.py --max_seq_length=64` without --doc_stride: the default 64 would leave the
    62-piece windows no shared context, so the run takes half the window, logs it and records
    it in flags.txt (which export_model.py reads)."""
    out = tmp_path / "out"
    result = _run(
        "run_ner.py",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={_config(tmp_path)}",
        f"--data_dir={CONLL}",
        "--do_train=true",
        "--do_eval=true",
        "--num_train_epochs=0.05",
        "--max_seq_length=64",
        f"--output_dir={out}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not [w for w in _warnings(result.stderr) if "--doc_stride" in w]
    assert "--doc_stride not given: 31, half of the 62-piece window" in result.stderr
    assert "--doc_stride=31" in (out / "flags.txt").read_text().split()
    assert "eval_f1" in (out / "eval_results.txt").read_text()
