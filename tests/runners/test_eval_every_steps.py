"""run_classifier.py --eval_every_steps: eval_history.jsonl and best_checkpoint/, checked against
separate evaluation runs of the checkpoints they name, and across a stop by SIGTERM and a resume.

A tiny random BERT on a small learnable SST-2-format task (its own vocabulary).
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from data.dev_metrics import read_eval_history, read_eval_results
from tests.helpers.glue_tasks import write_sst2
from tests.helpers.scripts import REPO, run_in_repo, start_in_repo
from tests.helpers.tiny_config import write_tiny_config

NUM_DEV = 20
EVERY = 4


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval_every_steps")
    write_sst2(root / "data", num_train=64, num_dev=NUM_DEV, num_test=4)
    words = set()
    for name in ("train", "dev"):
        for line in (root / "data" / f"{name}.tsv").read_text().splitlines()[1:]:
            words.update(line.split("\t")[0].split())
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(words)]
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n")
    write_tiny_config(root / "bert_config.json", vocab_size=len(vocab))
    return root


def _command(task, out, *extra):
    return [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        "--task_name=SST-2",
        f"--data_dir={task / 'data'}",
        f"--vocab_file={task / 'vocab.txt'}",
        f"--bert_config_file={task / 'bert_config.json'}",
        "--max_seq_length=16",
        "--train_batch_size=8",
        "--eval_batch_size=8",
        "--learning_rate=2e-3",
        f"--output_dir={out}",
        "--do_eval",
        *extra,
    ]


def _run(task, out, *extra):
    result = run_in_repo(_command(task, out, *extra), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def trained(task):
    """32 steps (64 examples, batch 8, 4 epochs), evaluated every 4; every checkpoint kept."""
    out = task / "out"
    _run(
        task,
        out,
        "--do_train",
        "--num_train_epochs=4",
        f"--eval_every_steps={EVERY}",
        "--keep_checkpoint_max=10",
    )
    return out


def test_history_has_every_evaluation(trained):
    lines = (trained / "eval_history.jsonl").read_text().splitlines()
    history = [json.loads(line) for line in lines]
    assert [e["step"] for e in history] == list(range(EVERY, 33, EVERY))
    for entry in history:
        assert entry["metric"] == "eval_accuracy"
        assert entry["value"] == entry["results"]["eval_accuracy"]
        assert entry["results"]["global_step"] == entry["step"]
        assert set(entry["predicted_classes"]) == {"0", "1"}
        assert sum(entry["predicted_classes"].values()) == NUM_DEV
    assert len({e["value"] for e in history}) > 1, "the test needs a metric that moves"
    # The last line is the run's final --do_eval.
    final = read_eval_results(trained)
    assert final == pytest.approx(history[-1]["results"], abs=1e-6)
    assert read_eval_history(trained) == history


def test_best_checkpoint_holds_the_best_step(task, trained, tmp_path):
    history = read_eval_history(trained)
    values = [e["value"] for e in history]
    best_step = history[int(np.argmax(values))]["step"]
    best = trained / "best_checkpoint"
    kept = read_eval_results(best)
    assert kept["global_step"] == best_step
    assert kept["eval_accuracy"] == pytest.approx(max(values), abs=1e-6)
    config = json.loads((best / "bert_config.json").read_text())
    for key, value in json.loads((task / "bert_config.json").read_text()).items():
        assert config[key] == value, key
    # Google's names, the weights of the training checkpoint of that step.
    saved = dict(tf.train.list_variables(str(best / "bert_model.ckpt")))
    assert "output_weights" in saved and "bert/embeddings/word_embeddings" in saved
    step_reader = tf.train.load_checkpoint(str(trained / f"model.ckpt-{best_step}"))
    best_reader = tf.train.load_checkpoint(str(best / "bert_model.ckpt"))
    for name in saved:
        np.testing.assert_array_equal(best_reader.get_tensor(name), step_reader.get_tensor(name))

    # The oracle: evaluation runs of their own from the best checkpoint and from another step.
    other = next(e for e in history if e["value"] != max(values))
    for checkpoint, want in (
        (best / "bert_model.ckpt", max(values)),
        (trained / f"model.ckpt-{other['step']}", other["value"]),
    ):
        out = tmp_path / checkpoint.parent.name / checkpoint.name
        _run(task, out, f"--init_checkpoint={checkpoint}")
        got = read_eval_results(out)["eval_accuracy"]
        assert got == pytest.approx(want, abs=1e-6), checkpoint
        # An evaluation-only run logs its evaluation too.
        assert [e["value"] for e in read_eval_history(out)] == pytest.approx([got])


@pytest.mark.slow
def test_stopped_by_sigterm_and_resumed(task, tmp_path):
    out = tmp_path / "out"
    command = _command(
        task,
        out,
        "--do_train",
        "--num_train_epochs=6",
        "--eval_every_steps=2",
        "--save_checkpoints_steps=3",
    )
    process = start_in_repo(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    history = out / "eval_history.jsonl"
    deadline = time.time() + 300
    while not (history.exists() and len(history.read_text().splitlines()) >= 2):
        assert process.poll() is None and time.time() < deadline, "no evaluation before the end"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert "Stopped by signal" in stderr
    stopped = read_eval_history(out)
    assert 2 <= len(stopped) < 24

    result = _run(task, out, "--do_train", "--num_train_epochs=6", "--eval_every_steps=2")
    assert "Resumed from" in result.stderr
    history = read_eval_history(out)
    assert [e["step"] for e in history] == list(range(2, 49, 2))
    # Lines of the first process are kept as they were.
    assert history[: len(stopped) - 1] == stopped[:-1]
    values = [e["value"] for e in history]
    kept = read_eval_results(out / "best_checkpoint")
    assert kept["eval_accuracy"] == pytest.approx(max(values), abs=1e-6)
    assert kept["global_step"] == history[int(np.argmax(values))]["step"]
