"""run_classifier.py end to end with real weights (all-MiniLM-L6-v2 in Google's layout)."""

import csv
import os
import sys

import numpy as np
import pytest

from data.dev_metrics import read_eval_history
from tests.helpers.glue_tasks import write_mrpc, write_sst2, write_stsb
from tests.helpers.scripts import REPO, run_in_repo


def _run(minilm_tf1, task, data_dir, out, *extra):
    cmd = [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        f"--task_name={task}",
        f"--data_dir={data_dir}",
        f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
        f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
        f"--init_checkpoint={minilm_tf1 / 'bert_model.ckpt'}",
        "--max_seq_length=24",
        "--train_batch_size=16",
        "--eval_batch_size=32",
        "--predict_batch_size=32",
        "--learning_rate=5e-5",
        "--num_train_epochs=2",
        f"--output_dir={out}",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--log_every_steps=10",
        *extra,
    ]
    return run_in_repo(cmd, timeout=900)


def _results(out):
    return {
        k: v
        for k, v in (
            line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines()
        )
    }


def _rows(path):
    with open(path) as f:
        return list(csv.reader(f, delimiter="\t"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "task,writer,board",
    [
        ("SST-2", write_sst2, "SST-2.tsv"),
        ("mrpc", write_mrpc, "MRPC.tsv"),
    ],
)
def test_fine_tuning_classifies(minilm_tf1, tmp_path, task, writer, board):
    writer(tmp_path / "data", num_train=320, num_dev=96, num_test=40)
    out = tmp_path / "out"
    result = _run(minilm_tf1, task, tmp_path / "data", out)
    assert result.returncode == 0, result.stderr[-3000:]
    results = _results(out)
    # int(320 / 16 * 2) = 40 steps, as the original computes them.
    assert results["global_step"] == "40"
    assert {"eval_accuracy", "eval_loss", "loss"} <= set(results)
    assert float(results["eval_accuracy"]) >= 0.9, results
    if task == "mrpc":
        assert float(results["eval_f1"]) >= 0.9
    probabilities = np.array(_rows(out / "test_results.tsv"), dtype=np.float64)
    assert probabilities.shape == (40, 2)
    np.testing.assert_allclose(probabilities.sum(1), 1.0, atol=1e-5)
    rows = _rows(out / board)
    assert rows[0] == ["index", "prediction"] and len(rows) == 41
    assert [r[0] for r in rows[1:]] == [str(i) for i in range(40)]
    assert [int(r[1]) for r in rows[1:]] == list(np.argmax(probabilities, 1))

    if task != "SST-2":
        return
    # Evaluation and prediction again from the checkpoint with every batch at the full
    # --max_seq_length, as the original: the same results (batches were cut to length above).
    leaderboard = (out / board).read_text()
    full = _run(
        minilm_tf1, task, tmp_path / "data", out, "--do_train=false", "--pad_to_max_seq_length"
    )
    assert full.returncode == 0, full.stderr[-3000:]
    again = _results(out)
    assert sorted(again) == sorted(results)
    for key in results:
        assert float(again[key]) == pytest.approx(float(results[key]), abs=1e-5), key
    full_probabilities = np.array(_rows(out / "test_results.tsv"), dtype=np.float64)
    np.testing.assert_allclose(full_probabilities, probabilities, rtol=0, atol=1e-5)
    assert (out / board).read_text() == leaderboard


@pytest.mark.slow
def test_regression_stsb(minilm_tf1, tmp_path):
    write_stsb(tmp_path / "data", num_train=320, num_dev=96, num_test=40)
    out = tmp_path / "out"
    # Trained on batches grouped by length: still learns the task.
    result = _run(
        minilm_tf1, "STS-B", tmp_path / "data", out, "--learning_rate=1e-4", "--group_by_length"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = _results(out)
    assert float(results["eval_pearson"]) > 0.8 and float(results["eval_spearman"]) > 0.7
    assert "eval_accuracy" not in results
    # The final evaluation's history line: Spearman, and no class counts for a regression.
    (entry,) = read_eval_history(out)
    assert entry["metric"] == "eval_spearman" and "predicted_classes" not in entry
    assert entry["value"] == pytest.approx(float(results["eval_spearman"]), abs=1e-6)
    rows = _rows(out / "STS-B.tsv")
    values = [float(r[1]) for r in rows[1:]]
    assert len(values) == 40 and all(0.0 <= v <= 5.0 for v in values)
    assert len(_rows(out / "test_results.tsv")[0]) == 1


@pytest.mark.parametrize(
    "extra,message",
    [
        (
            ["--do_train=false", "--do_eval=false", "--do_predict=false"],
            "At least one of `do_train`, `do_eval` or `do_predict' must be True.",
        ),
        (["--task_name=nope"], "Task not found: nope"),
        (
            ["--max_seq_length=1000"],
            "Cannot use sequence length 1000 because the BERT model was "
            "only trained up to sequence length 512: pass --max_seq_length=512 or less "
            "(max_position_embeddings in --bert_config_file).",
        ),
    ],
)
def test_startup_checks(minilm_tf1, tmp_path, extra, message):
    result = _run(minilm_tf1, "sst2", tmp_path, tmp_path / "out", *extra)
    assert result.returncode != 0
    assert message in result.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_case_check_runs_first(minilm_tf1, tmp_path):
    cased = tmp_path / "cased_L-12_H-768_A-12"
    cased.mkdir()
    result = _run(
        minilm_tf1,
        "sst2",
        tmp_path,
        tmp_path / "out",
        f"--init_checkpoint={cased / 'bert_model.ckpt'}",
        "--do_train=false",
        "--do_eval=false",
        "--do_predict=false",
    )
    assert result.returncode != 0
    assert "seems to be a cased model, so you should pass in `--do_lower_case=False`" in (
        result.stderr
    )
    assert not (tmp_path / "out").exists()
