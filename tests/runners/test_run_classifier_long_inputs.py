"""run_classifier.py on inputs longer than --max_seq_length: windows aggregated per example
(every metric and output file per example), head and tail."""

import csv
import os
import re
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

from data.dev_metrics import read_eval_history, read_eval_results
from data.glue.processors import get_processor
from data.tokenization.full_tokenizer import FullTokenizer
from modeling import tf1_checkpoint
from modeling.task_models import BertClassifier
from tests.helpers.glue_tasks import write_sst2
from tests.helpers.paths import TESTDATA
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.tiny_config import tiny_config, write_tiny_config

VOCAB = os.path.join(TESTDATA, "glue", "vocab.txt")
VOCAB_SIZE = sum(1 for _ in open(VOCAB, encoding="utf-8"))
LENGTH = 16


def _lengthen(directory, times):
    """Each sentence repeated `times` times: several windows of 14 pieces at stride 7."""
    for name, column in (("train", 0), ("dev", 0), ("test", 1)):
        path = directory / f"{name}.tsv"
        rows = [line.split("\t") for line in path.read_text().splitlines()]
        for row in rows[1:]:
            row[column] = " ".join([row[column]] * times)
        path.write_text("".join("\t".join(row) + "\n" for row in rows))


def _windows_command(root, out):
    """run_classifier.py on the long SST-2 files of `root`, in windows, into `out`."""
    return [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        "--task_name=SST-2",
        f"--data_dir={root / 'data'}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={root / 'bert_config.json'}",
        f"--max_seq_length={LENGTH}",
        "--long_inputs=windows",
        f"--output_dir={out}",
    ]


@pytest.fixture(scope="module")
def windows_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("long_inputs")
    write_sst2(root / "data", num_train=48, num_dev=10, num_test=6)
    _lengthen(root / "data", 8)
    write_tiny_config(root / "bert_config.json", vocab_size=VOCAB_SIZE)
    out = root / "out"
    result = run_in_repo(
        [
            *_windows_command(root, out),
            "--do_train",
            "--do_eval",
            "--do_predict",
            "--train_batch_size=8",
            "--num_train_epochs=2",
            "--eval_every_steps=40",
            "--learning_rate=1e-3",
        ],
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {"root": root, "out": out, "stderr": result.stderr}


def _window_probabilities(out, examples):
    """Each example's windows run one at a time through the run's checkpoint, in this
    process: list (per example) of [windows, 2] probabilities."""
    tokenizer = FullTokenizer(VOCAB, do_lower_case=True)
    model = BertClassifier(tiny_config(vocab_size=VOCAB_SIZE), 2)
    checkpoint = tf.train.latest_checkpoint(str(out))
    tf1_checkpoint.load_tf1_checkpoint(
        checkpoint, bert_model=model.bert, classifier=model.classifier
    )
    per_example = []
    for example in examples:
        pieces = tokenizer.tokenize(example.text_a)
        # Windows of 14 pieces, 7 apart, the last one ending at the last piece (the original
        # run_squad's loop, written out here rather than taken from the product).
        starts, start = [], 0
        while True:
            starts.append(start)
            if start + 14 >= len(pieces):
                break
            start += 7
        rows = []
        for start in starts:
            tokens = ["[CLS]", *pieces[start : start + 14], "[SEP]"]
            ids = tokenizer.convert_tokens_to_ids(tokens)
            inputs = {
                "input_ids": np.array([ids], np.int32),
                "input_mask": np.ones([1, len(ids)], np.int32),
                "segment_ids": np.zeros([1, len(ids)], np.int32),
            }
            rows.append(tf.nn.softmax(model(inputs, training=False), -1).numpy()[0])
        per_example.append(np.array(rows))
    return per_example


@pytest.mark.slow
def test_prediction_is_the_mean_of_the_windows(windows_run):
    out, data = windows_run["out"], windows_run["root"] / "data"
    examples = get_processor("sst2").get_test_examples(str(data))
    with open(out / "test_results.tsv") as f:
        written = np.array([[float(v) for v in row] for row in csv.reader(f, delimiter="\t")])
    windows = _window_probabilities(out, examples)
    assert len(written) == len(examples) == 6
    assert min(len(w) for w in windows) >= 3
    np.testing.assert_allclose(written, [w.mean(axis=0) for w in windows], atol=1e-5)
    # The leaderboard file: one row per example too.
    board = (out / "SST-2.tsv").read_text().splitlines()
    assert len(board) == 1 + len(examples)
    assert [int(r.split("\t")[1]) for r in board[1:]] == np.argmax(written, 1).tolist()


def test_metrics_are_per_example(windows_run):
    out, data = windows_run["out"], windows_run["root"] / "data"
    examples = get_processor("sst2").get_dev_examples(str(data))
    mean = np.array([w.mean(axis=0) for w in _window_probabilities(out, examples)])
    labels = np.array([int(e.label) for e in examples])
    results = dict(
        line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines()
    )
    accuracy = np.mean(np.argmax(mean, 1) == labels)
    assert float(results["eval_accuracy"]) == pytest.approx(accuracy, abs=1e-6)
    loss = -np.log(mean[np.arange(len(labels)), labels]).mean()
    assert float(results["eval_loss"]) == pytest.approx(loss, abs=1e-5)
    assert "Num windows = " in windows_run["stderr"]


def test_progress_lines_count_windows_as_windows(windows_run):
    """Each pass over the dev set (10 examples) and the test set (6) counts its windows, as
    many as its header's "Num windows", and names the examples they are windows of."""
    stderr = windows_run["stderr"]
    windows = {int(n) for n in re.findall(r"Num windows = (\d+) \(", stderr)}
    lines = re.findall(r"predict: (\d+)/(\d+) (.+?), ", stderr)
    assert {what for _, _, what in lines} == {"windows of 10 examples", "windows of 6 examples"}
    assert {int(total) for _, total, _ in lines} == windows
    assert min(windows) > 10  # several windows per example: windows and examples differ


def test_whole_batches_fill_the_last_batch_of_windows(windows_run, tmp_path):
    """--pad_to_whole_batches (the fixed shape of TPUs and multi-worker runs) fills the last
    batch of windows: the header counts that filling with the windows, not the examples, and
    the evaluation is the variable-shape one's."""
    out = tmp_path / "out"
    shutil.copytree(windows_run["out"], out)
    (out / "eval_results.txt").unlink()  # so the one compared below is this run's
    # The dev set's windows (its header comes first); a batch of one fewer leaves a last batch
    # of one window and the rest filling.
    windows = int(re.search(r"Num windows = (\d+) \(", windows_run["stderr"]).group(1))
    result = run_in_repo(
        [
            *_windows_command(windows_run["root"], out),
            "--do_eval",
            "--pad_to_whole_batches",
            f"--eval_batch_size={windows - 1}",
        ],
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Num examples = 10 (10 actual, 0 padding)" in result.stderr
    filling = windows - 2
    expected = f"Num windows = {windows + filling} ({windows} actual, {filling} padding)"
    assert expected in result.stderr
    assert f"predict: {windows}/{windows} windows of 10 examples, " in result.stderr
    padded, variable = read_eval_results(out), read_eval_results(windows_run["out"])
    assert padded["eval_accuracy"] == variable["eval_accuracy"]
    assert padded["eval_loss"] == pytest.approx(variable["eval_loss"], abs=1e-5)


def test_dev_evaluations_are_per_example(windows_run):
    """The dev evaluation during training is the final one's: metrics and predicted classes
    per example, not per window."""
    out = windows_run["out"]
    history = read_eval_history(out)
    steps = int(re.search(r"Num steps = (\d+)", windows_run["stderr"]).group(1))
    assert [e["step"] for e in history] == [*range(40, steps, 40), steps]
    assert len(history) > 1
    assert all(sum(e["predicted_classes"].values()) == 10 for e in history)
    final = read_eval_results(out)
    assert history[-1]["results"] == pytest.approx(final, abs=1e-6)
