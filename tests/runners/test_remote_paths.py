"""Every runner with its inputs and outputs on a TensorFlow file system (`ram://`), as on gs://.

Each runner runs in a child process (tests/helpers/ram_run.py) that sees only `ram://` paths;
what it wrote is copied back and checked against what the same command writes on local disk
(create_pretraining_data, build_vocab: the same records and vocabulary) or for the files a run
must leave (checkpoints, results, predictions, exports).
"""

import json
import os
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

from modeling import tf1_checkpoint
from tests.helpers.paths import TESTDATA
from tests.helpers.pretraining_records import write_records
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.tiny_config import write_tiny_config

VOCAB = os.path.join(TESTDATA, "glue", "vocab.txt")
RAM = "ram://work"


def _ram_run(tmp_path, runner, argv, inputs, outputs):
    """Runs `runner` with `argv` (paths under ram://work/); `inputs` {local: ram name} are
    copied in first, `outputs` {ram name: local} copied back after."""
    spec = {
        "runner": runner,
        "argv": argv,
        "copy_in": {str(local): f"{RAM}/{name}" for local, name in inputs.items()},
        "copy_out": {f"{RAM}/{name}": str(local) for name, local in outputs.items()},
    }
    spec_file = tmp_path / f"spec-{runner}.json"
    spec_file.write_text(json.dumps(spec))
    result = run_in_repo([sys.executable, "-m", "tests.helpers.ram_run", str(spec_file)])
    assert result.returncode == 0, result.stderr[-4000:]
    # Nothing of the run may land on local disk under the ram:// names.
    assert not os.path.exists(os.path.join(REPO, "ram:"))
    return result


def _records(path):
    return [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(path))]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny model pre-trained for 3 steps by run_pretraining.py on ram:// (its own test):
    bert_config.json, bert_model.ckpt and the GLUE fixtures' vocab.txt, copied back."""
    root = tmp_path_factory.mktemp("ram_model")
    inputs = root / "inputs"
    inputs.mkdir()
    write_records(inputs / "data.tfrecord", num_examples=32)
    vocab_size = sum(1 for _ in open(VOCAB, encoding="utf-8"))
    write_tiny_config(inputs / "bert_config.json", vocab_size=vocab_size)
    result = _ram_run(
        root,
        "run_pretraining.py",
        [
            f"--input_file={RAM}/in/data.tfrecord",
            f"--bert_config_file={RAM}/in/bert_config.json",
            f"--output_dir={RAM}/out",
            "--do_train",
            "--do_eval",
            "--train_batch_size=8",
            "--eval_batch_size=8",
            "--max_eval_steps=2",
            "--max_seq_length=32",
            "--max_predictions_per_seq=5",
            "--num_train_steps=3",
            "--num_warmup_steps=1",
            "--save_checkpoints_steps=2",
        ],
        {inputs: "in"},
        {"out": root / "out"},
    )
    out = root / "out"
    shutil.copy(VOCAB, out / "vocab.txt")
    return {"dir": out, "log": result.stderr}


def test_run_pretraining(model):
    out = model["dir"]
    names = set(os.listdir(out))
    assert {"checkpoint", "eval_results.txt", "flags.txt", "bert_config.json"} <= names
    assert {"model.ckpt-2.index", "model.ckpt-3.index", "bert_model.ckpt.index"} <= names
    assert "global_step = 3" in (out / "eval_results.txt").read_text()
    assert tf.io.gfile.glob(str(out / "train" / "events.*"))
    assert 'model_checkpoint_path: "model.ckpt-3"' in (out / "checkpoint").read_text()
    saved = tf1_checkpoint.read_checkpoint(str(out / "model.ckpt-3"), include_optimizer=True)
    assert int(saved["global_step"]) == 3


def test_create_pretraining_data_and_build_vocab_equal_local(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "".join(
            f"the movie was great number {i} .\nthe film is dull and long .\n\n" for i in range(30)
        )
    )
    common = ["--do_lower_case=True", "--max_seq_length=32", "--max_predictions_per_seq=5"]
    local = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "create_pretraining_data.py"),
            f"--input_file={corpus}",
            f"--vocab_file={VOCAB}",
            f"--output_file={tmp_path / 'local.tfrecord'}",
            *common,
        ]
    )
    assert local.returncode == 0, local.stderr[-3000:]
    _ram_run(
        tmp_path,
        "create_pretraining_data.py",
        [
            f"--input_file={RAM}/corpus.txt",
            f"--vocab_file={RAM}/vocab.txt",
            f"--output_file={RAM}/out/remote.tfrecord",
            *common,
        ],
        {corpus: "corpus.txt", VOCAB: "vocab.txt"},
        {"out/remote.tfrecord": tmp_path / "remote.tfrecord"},
    )
    assert _records(tmp_path / "remote.tfrecord") == _records(tmp_path / "local.tfrecord")

    vocab_args = ["--vocab_size=1100", "--do_lower_case=True"]
    local = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "build_vocab.py"),
            f"--input_file={corpus}",
            f"--output_file={tmp_path / 'local_vocab.txt'}",
            *vocab_args,
        ]
    )
    assert local.returncode == 0, local.stderr[-3000:]
    _ram_run(
        tmp_path,
        "build_vocab.py",
        [f"--input_file={RAM}/corpus.txt", f"--output_file={RAM}/out/vocab.txt", *vocab_args],
        {corpus: "corpus.txt"},
        {"out/vocab.txt": tmp_path / "remote_vocab.txt"},
    )
    assert (tmp_path / "remote_vocab.txt").read_bytes() == (
        tmp_path / "local_vocab.txt"
    ).read_bytes()


def _fine_tuning_args(task_flags):
    return [
        f"--vocab_file={RAM}/model/vocab.txt",
        f"--bert_config_file={RAM}/model/bert_config.json",
        f"--init_checkpoint={RAM}/model/bert_model.ckpt",
        f"--output_dir={RAM}/out",
        "--train_batch_size=4",
        "--predict_batch_size=4",
        "--num_train_epochs=0.1",
        "--do_train",
        *task_flags,
    ]


def test_run_classifier(model, tmp_path):
    _ram_run(
        tmp_path,
        "run_classifier.py",
        _fine_tuning_args(
            [
                "--task_name=MRPC",
                f"--data_dir={RAM}/glue",
                "--max_seq_length=24",
                "--eval_batch_size=4",
                "--do_eval",
                "--do_predict",
            ]
        ),
        {model["dir"]: "model", os.path.join(TESTDATA, "glue", "MRPC"): "glue"},
        {"out": tmp_path / "out"},
    )
    names = set(os.listdir(tmp_path / "out"))
    assert {"eval_results.txt", "test_results.tsv", "MRPC.tsv", "flags.txt"} <= names
    assert tf.io.gfile.glob(str(tmp_path / "out" / "eval" / "events.*"))
    rows = (tmp_path / "out" / "test_results.tsv").read_text().splitlines()
    assert rows and all(len(row.split("\t")) == 2 for row in rows)


def test_run_ner(model, tmp_path):
    conll = tmp_path / "conll"
    conll.mkdir()
    # The first sentences of train.txt in all three files: every tag of dev and test is then
    # one the labels learned from train.txt know.
    sentences = open(os.path.join(TESTDATA, "conll2003", "train.txt")).read().split("\n\n")
    for name in ("train", "dev", "test"):
        (conll / f"{name}.txt").write_text("\n\n".join(sentences[:12]) + "\n")
    _ram_run(
        tmp_path,
        "run_ner.py",
        _fine_tuning_args(
            [
                f"--data_dir={RAM}/conll",
                "--max_seq_length=32",
                "--doc_stride=15",
                "--eval_batch_size=4",
                "--do_eval",
                "--do_predict",
            ]
        ),
        {model["dir"]: "model", conll: "conll"},
        {"out": tmp_path / "out"},
    )
    names = set(os.listdir(tmp_path / "out"))
    assert {"eval_results.txt", "eval_predictions.txt", "test_predictions.txt"} <= names


def test_run_squad(model, tmp_path):
    squad = tmp_path / "squad"
    squad.mkdir()
    for name in ("train-v1.1.json", "dev-v1.1.json"):
        data = json.load(open(os.path.join(TESTDATA, "squad", name)))
        data["data"] = data["data"][:1]
        data["data"][0]["paragraphs"] = data["data"][0]["paragraphs"][:2]
        (squad / name).write_text(json.dumps(data))
    _ram_run(
        tmp_path,
        "run_squad.py",
        _fine_tuning_args(
            [
                f"--train_file={RAM}/squad/train-v1.1.json",
                f"--predict_file={RAM}/squad/dev-v1.1.json",
                "--max_seq_length=48",
                "--doc_stride=16",
                "--max_query_length=16",
                "--do_predict",
            ]
        ),
        {model["dir"]: "model", squad: "squad"},
        {"out": tmp_path / "out"},
    )
    predictions = json.loads((tmp_path / "out" / "predictions.json").read_text())
    assert predictions and all(isinstance(v, str) for v in predictions.values())
    assert (tmp_path / "out" / "nbest_predictions.json").exists()


def test_extract_features_convert_and_export(model, tmp_path):
    text = tmp_path / "input.txt"
    text.write_text("the movie was great\nthe film ||| is dull\n")
    _ram_run(
        tmp_path,
        "extract_features.py",
        [
            f"--input_file={RAM}/input.txt",
            f"--output_file={RAM}/out/features.jsonl",
            f"--vocab_file={RAM}/model/vocab.txt",
            f"--bert_config_file={RAM}/model/bert_config.json",
            f"--init_checkpoint={RAM}/model/bert_model.ckpt",
            "--max_seq_length=16",
            "--layers=-1",
        ],
        {model["dir"]: "model", text: "input.txt"},
        {"out": tmp_path / "features"},
    )
    lines = (tmp_path / "features" / "features.jsonl").read_text().splitlines()
    assert [json.loads(line)["linex_index"] for line in lines] == [0, 1]

    _ram_run(
        tmp_path,
        "convert_checkpoint.py",
        [
            f"--input_checkpoint={RAM}/model/bert_model.ckpt",
            "--input_format=tf1",
            f"--output_dir={RAM}/out/hf",
            "--output_format=hf",
        ],
        {model["dir"]: "model"},
        {"out/hf": tmp_path / "hf"},
    )
    assert {"config.json", "model.safetensors"} <= set(os.listdir(tmp_path / "hf"))
    original = tf1_checkpoint.read_checkpoint(str(model["dir"] / "bert_model.ckpt"))
    from safetensors.numpy import load_file

    converted = load_file(str(tmp_path / "hf" / "model.safetensors"))
    np.testing.assert_array_equal(
        converted["bert.embeddings.word_embeddings.weight"],
        original["bert/embeddings/word_embeddings"],
    )

    _ram_run(
        tmp_path,
        "export_model.py",
        [
            "--task=encoder",
            f"--checkpoint={RAM}/model/bert_model.ckpt",
            f"--bert_config_file={RAM}/model/bert_config.json",
            f"--vocab_file={RAM}/model/vocab.txt",
            f"--export_dir={RAM}/out/encoder",
        ],
        {model["dir"]: "model"},
        {"out/encoder": tmp_path / "encoder"},
    )
    assert "saved_model.pb" in os.listdir(tmp_path / "encoder")
