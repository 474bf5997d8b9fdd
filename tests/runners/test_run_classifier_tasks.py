"""run_classifier.py end to end on MNLI (matched and mismatched), AX, CoLA and XNLI.

A tiny random BERT on the official-layout fixtures of tests/testdata/glue, each task run once
as a user runs it. The files the runner writes are checked for their layout, and its evaluation
results and predictions against the trained checkpoint evaluated another way: loaded into the
Keras model in this process and run on the examples directly, with the metrics in NumPy.
"""

import csv
import os
import shutil
import sys

import numpy as np
import pytest
import sklearn.metrics as skm
import tensorflow as tf

from data.glue.features import convert_examples_to_features
from data.glue.processors import get_processor
from data.tokenization.full_tokenizer import FullTokenizer
from modeling import tf1_checkpoint
from modeling.task_models import BertClassifier
from tests.helpers.paths import TESTDATA
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.tiny_config import tiny_config, write_tiny_config

GLUE = os.path.join(TESTDATA, "glue")
VOCAB = os.path.join(GLUE, "vocab.txt")
MAX_SEQ_LENGTH = 24
MNLI_LABELS = ["contradiction", "entailment", "neutral"]


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_glue_model")
    vocab_size = sum(1 for _ in open(VOCAB, encoding="utf-8"))
    write_tiny_config(root / "bert_config.json", vocab_size=vocab_size)
    return root


def _run(model_files, task, data_dir, out, *extra):
    cmd = [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        f"--task_name={task}",
        f"--data_dir={data_dir}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={model_files / 'bert_config.json'}",
        f"--max_seq_length={MAX_SEQ_LENGTH}",
        "--train_batch_size=2",
        "--eval_batch_size=2",
        "--predict_batch_size=2",
        "--learning_rate=1e-3",
        "--num_train_epochs=2",
        "--log_every_steps=1",
        f"--output_dir={out}",
        *extra,
    ]
    result = run_in_repo(cmd, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _results(out):
    lines = (out / "eval_results.txt").read_text().splitlines()
    return {k: v for k, v in (line.split(" = ") for line in lines)}


def _rows(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t"))


def _model_outputs(task, checkpoint, examples):
    """Probabilities and per-example losses of `checkpoint` on `examples`, in this process."""
    processor = get_processor(task)
    labels = processor.get_labels()
    features = convert_examples_to_features(
        examples, labels, MAX_SEQ_LENGTH, FullTokenizer(VOCAB, do_lower_case=True)
    )
    vocab_size = sum(1 for _ in open(VOCAB, encoding="utf-8"))
    model = BertClassifier(tiny_config(vocab_size=vocab_size), len(labels))
    tf1_checkpoint.load_tf1_checkpoint(
        checkpoint, bert_model=model.bert, classifier=model.classifier
    )
    inputs = {
        name: np.array([getattr(f, name) for f in features], np.int32)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
    probabilities = tf.nn.softmax(model(inputs, training=False), axis=-1).numpy()
    label_ids = np.array([f.label_id for f in features])
    losses = -np.log(probabilities[np.arange(len(features)), label_ids])
    return probabilities, label_ids, losses


def _check_eval(results, prefix, probabilities, label_ids, losses):
    accuracy = float(np.mean(np.argmax(probabilities, -1) == label_ids))
    np.testing.assert_allclose(float(results[f"eval_{prefix}accuracy"]), accuracy, atol=1e-6)
    np.testing.assert_allclose(float(results[f"eval_{prefix}loss"]), losses.mean(), atol=1e-5)


@pytest.mark.slow
def test_mnli_matched_and_mismatched_then_ax(model_files, tmp_path):
    out = tmp_path / "mnli"
    _run(model_files, "MNLI", os.path.join(GLUE, "MNLI"), out, "--do_train", "--do_eval",
         "--do_predict")  # fmt: skip
    results = _results(out)
    # int(5 examples / batch 2 * 2 epochs) = 5 steps, as the original counts them.
    assert results["global_step"] == "5"
    assert sorted(results) == [
        "eval_accuracy", "eval_loss", "eval_mismatched_accuracy", "eval_mismatched_loss",
        "global_step", "loss", "mismatched_loss",
    ]  # fmt: skip
    processor = get_processor("mnli")
    checkpoint = str(out / "model.ckpt-5")
    dev_sets = processor.get_dev_sets(os.path.join(GLUE, "MNLI"))
    _check_eval(results, "", *_model_outputs("mnli", checkpoint, dev_sets["dev_matched"]))
    mismatched = _model_outputs("mnli", checkpoint, dev_sets["dev_mismatched"])
    _check_eval(results, "mismatched_", *mismatched)

    test_sets = processor.get_test_sets(os.path.join(GLUE, "MNLI"))
    probabilities, _, _ = _model_outputs("mnli", checkpoint, test_sets["MNLI-m"])
    written = np.array(_rows(out / "test_results.tsv"), np.float64)
    np.testing.assert_allclose(written, probabilities, atol=1e-5)
    for board, examples in test_sets.items():
        rows = _rows(out / f"{board}.tsv")
        expected, _, _ = _model_outputs("mnli", checkpoint, examples)
        assert rows[0] == ["index", "prediction"]
        assert rows[1:] == [[str(i), MNLI_LABELS[k]] for i, k in enumerate(np.argmax(expected, -1))]
    assert {"predict.tf_record", "predict_MNLI-mm.tf_record", "dev_mismatched.tf_record"} <= set(
        os.listdir(out)
    )

    # AX: the diagnostic set, predicted with the MNLI model (as scripts/run_glue_all.sh does).
    ax_out = tmp_path / "ax"
    _run(model_files, "AX", os.path.join(GLUE, "diagnostic"), ax_out, "--do_predict",
         f"--init_checkpoint={checkpoint}")  # fmt: skip
    ax_examples = get_processor("ax").get_test_examples(os.path.join(GLUE, "diagnostic"))
    expected, _, _ = _model_outputs("ax", checkpoint, ax_examples)
    rows = _rows(ax_out / "AX.tsv")
    assert rows[1:] == [[str(i), MNLI_LABELS[k]] for i, k in enumerate(np.argmax(expected, -1))]
    assert not os.path.exists(ax_out / "eval_results.txt")


def test_cola_reports_matthews_correlation(model_files, tmp_path):
    out = tmp_path / "cola"
    _run(model_files, "CoLA", os.path.join(GLUE, "CoLA"), out, "--do_train", "--do_eval",
         "--do_predict")  # fmt: skip
    results = _results(out)
    assert sorted(results) == ["eval_accuracy", "eval_loss", "eval_mcc", "global_step", "loss"]
    steps = sorted(int(p.split("-")[1].split(".")[0]) for p in os.listdir(out) if ".index" in p)
    checkpoint = str(out / f"model.ckpt-{steps[-1]}")
    examples = get_processor("cola").get_dev_examples(os.path.join(GLUE, "CoLA"))
    probabilities, label_ids, losses = _model_outputs("cola", checkpoint, examples)
    _check_eval(results, "", probabilities, label_ids, losses)
    predicted = np.argmax(probabilities, -1)
    mcc = skm.matthews_corrcoef(label_ids, predicted)
    np.testing.assert_allclose(float(results["eval_mcc"]), mcc, atol=1e-6)
    rows = _rows(out / "CoLA.tsv")
    test = get_processor("cola").get_test_examples(os.path.join(GLUE, "CoLA"))
    assert rows[0] == ["index", "prediction"] and len(rows) == len(test) + 1
    assert {r[1] for r in rows[1:]} <= {"0", "1"}


def test_xnli_trains_and_evaluates_one_language(model_files, tmp_path):
    data_dir = tmp_path / "XNLI"
    shutil.copytree(os.path.join(GLUE, "XNLI"), data_dir)
    out = tmp_path / "xnli"
    _run(model_files, "XNLI", data_dir, out, "--do_train", "--do_eval")
    results = _results(out)
    assert sorted(results) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
    steps = sorted(int(p.split("-")[1].split(".")[0]) for p in os.listdir(out) if ".index" in p)
    examples = get_processor("xnli").get_dev_examples(str(data_dir))
    # Only the zh rows of xnli.dev.tsv (the default --xnli_language), as the original.
    assert len(examples) == 3
    _check_eval(
        results, "", *_model_outputs("xnli", str(out / f"model.ckpt-{steps[-1]}"), examples)
    )
