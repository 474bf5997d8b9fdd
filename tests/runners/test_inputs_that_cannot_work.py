"""Each runner family refuses a setting that cannot work, and an input that yields no example,
with one sentence naming the flag or file, exit status 1, and nothing written."""

import json
import os
import sys

import pytest

from tests.helpers.glue_tasks import write_sst2
from tests.helpers.paths import TESTDATA
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.tiny_config import write_tiny_config

VOCAB = os.path.join(TESTDATA, "glue", "vocab.txt")


def _refused(program, args, out, message):
    """Runs `program`; checks exit status 1, the last stderr line, and that `out` is absent."""
    result = run_in_repo([sys.executable, os.path.join(REPO, program), *args], timeout=300)
    assert result.returncode == 1, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == f"{program}: error: {message}", result.stderr[-3000:]
    assert not os.path.exists(out)


@pytest.mark.parametrize("case", ["batch size", "empty dev set", "no dev file", "eval every"])
def test_classifier(tmp_path, case):
    write_sst2(tmp_path / "data", num_train=8, num_dev=4, num_test=4)
    write_tiny_config(tmp_path / "bert_config.json")
    out = tmp_path / "out"
    args = [
        "--task_name=SST-2",
        f"--data_dir={tmp_path / 'data'}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}",
        "--max_seq_length=16",
        f"--output_dir={out}",
        "--do_train",
        "--do_eval",
    ]
    if case == "batch size":
        args.append("--eval_batch_size=0")
        message = "--eval_batch_size=0 must be at least 1: pass a positive number of examples "
        message += "per batch."
    elif case == "eval every":
        args.append("--eval_every_steps=-1")
        message = "--eval_every_steps=-1 must be at least 0: pass the steps between dev "
        message += "evaluations, or 0."
    elif case == "empty dev set":
        dev = tmp_path / "data" / "dev.tsv"
        dev.write_text("sentence\tlabel\n")
        message = f"{dev} holds no examples; it must have at least one data row."
    else:
        dev = tmp_path / "data" / "dev.tsv"
        dev.unlink()
        message = (
            f"{dev} does not exist: --do_eval reads it from --data_dir={tmp_path / 'data'}; put "
            "the file there, or leave --do_eval off."
        )
    _refused("run_classifier.py", args, out, message)


def test_ner_without_its_dev_file(tmp_path):
    """The file a phase reads is checked before TensorFlow loads, not found missing by it."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.txt").write_text("EU B-ORG\nrejects O\n")
    write_tiny_config(tmp_path / "bert_config.json")
    out = tmp_path / "out"
    args = [
        f"--data_dir={data}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}",
        f"--output_dir={out}",
        "--max_seq_length=16",
        "--do_train",
        "--do_eval=true",
    ]
    message = (
        f"{data / 'dev.txt'} does not exist: --do_eval reads it from --data_dir={data}; put the "
        "file there, or leave --do_eval off."
    )
    _refused("run_ner.py", args, out, message)


@pytest.mark.parametrize("case", ["doc stride", "no predict file", "no answer found"])
def test_squad(tmp_path, case):
    # The answer text is not at answer_start: the only question is skipped.
    context = "Ada Lovelace wrote the first program in 1843."
    qa = {"id": "q-typo", "question": "When?", "answers": [{"text": "1844", "answer_start": 40}]}
    train = tmp_path / "train.json"
    train.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": [qa]}]}]}))
    write_tiny_config(tmp_path / "bert_config.json")
    out = tmp_path / "out"
    args = [
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}",
        f"--train_file={train}",
        "--do_train",
        "--max_seq_length=64",
        "--max_query_length=16",
        f"--output_dir={out}",
    ]
    if case == "doc stride":
        # Only a stride below 1 cannot work (the original's windows would never move on).
        args.append("--doc_stride=0")
        message = "--doc_stride=0 must be at least 1: pass the pieces between window starts, "
        message += "e.g. 128."
    elif case == "no predict file":
        args += ["--doc_stride=16", "--do_predict", f"--predict_file={tmp_path / 'dev.json'}"]
        message = (
            f"{tmp_path / 'dev.json'} does not exist: --do_predict reads it as "
            f"--predict_file={tmp_path / 'dev.json'}; put the file there, or leave --do_predict "
            "off."
        )
    else:
        args.append("--doc_stride=16")
        message = (
            f"--train_file={train} yields no training example: it holds no question, or no "
            "answer text was found at its answer_start (see the 'Could not find answer' "
            "warnings above); pass a SQuAD training file such as train-v1.1.json."
        )
    _refused("run_squad.py", args, out, message)


@pytest.mark.parametrize("case", ["no file", "no records"])
def test_pretraining(data, tmp_path, case):
    records = data / "data.tfrecord"
    length = "--max_seq_length=32"
    if case == "no file":
        predictions = "--max_predictions_per_seq=5"
        records = tmp_path / "part-*.tfrecord"
        message = (
            f"--input_file: no file matches '{records}'. Check the path; separate several "
            "files or patterns with commas."
        )
    else:
        predictions = "--max_predictions_per_seq=5"
        records = tmp_path / "empty.tfrecord"
        records.write_bytes(b"")
        message = (
            f"{records} holds no records: pass as --input_file the TFRecord files that "
            "create_pretraining_data.py wrote."
        )
    out = tmp_path / "out"
    args = [
        f"--input_file={records}",
        f"--bert_config_file={data / 'bert_config.json'}",
        f"--output_dir={out}",
        "--do_train",
        "--num_train_steps=1",
        length,
        predictions,
    ]
    _refused("run_pretraining.py", args, out, message)


def test_create_pretraining_data(tmp_path):
    (tmp_path / "corpus.txt").write_text("the cat sat .\n")
    out = tmp_path / "out.tfrecord"
    args = [
        f"--input_file={tmp_path / 'corpus.txt'}",
        f"--output_file={out}",
        f"--vocab_file={VOCAB}",
        "--max_seq_length=4",
    ]
    message = (
        "--max_seq_length=4 is too small for a pre-training pair ([CLS], one piece of A, [SEP], "
        "one piece of B, [SEP]): pass at least 5 (128 is usual)."
    )
    _refused("create_pretraining_data.py", args, out, message)


def test_extract_features_of_an_empty_file(tmp_path):
    write_tiny_config(tmp_path / "bert_config.json")
    empty = tmp_path / "input.txt"
    empty.write_text("")
    out = tmp_path / "out.jsonl"
    args = [
        f"--input_file={empty}",
        f"--output_file={out}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}",
        "--init_checkpoint=unused",
        "--layers=-1",
        "--max_seq_length=16",
    ]
    message = (
        f"--input_file={empty} is empty: write one example per line ('text_a' or "
        "'text_a ||| text_b')."
    )
    _refused("extract_features.py", args, out, message)
