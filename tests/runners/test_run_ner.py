"""run_ner.py end to end with real weights (MiniLM in the original layout) on real CoNLL-2003
sentences, scored again by seqeval and conlleval.pl from the prediction files it writes."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from seqeval.metrics import f1_score, precision_score, recall_score

from data.dev_metrics import read_eval_history
from data.ner.conll import read_conll
from modeling import tf1_checkpoint
from modeling.config import BertConfig
from tests.helpers.paths import REPO, TESTDATA
from tests.helpers.scripts import run_in_repo
from tests.helpers.tiny_config import write_tiny_config
from training.tasks import NerTask

CONLL = os.path.join(TESTDATA, "conll2003")
CONLLEVAL = os.path.join(REPO, "tests", "oracles", "conlleval.pl")


def _run(minilm_tf1, out, *extra, data_dir=CONLL):
    cmd = [
        sys.executable,
        os.path.join(REPO, "run_ner.py"),
        f"--data_dir={data_dir}",
        f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
        f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
        f"--init_checkpoint={minilm_tf1 / 'bert_model.ckpt'}",
        # MiniLM is uncased.
        "--do_lower_case=true",
        "--max_seq_length=64",
        # Smaller than the 62-piece window (the default 64 is for --max_seq_length=128).
        "--doc_stride=32",
        "--train_batch_size=16",
        "--eval_batch_size=32",
        "--predict_batch_size=32",
        "--learning_rate=1e-4",
        f"--output_dir={out}",
        "--log_every_steps=20",
        "--iterations_per_loop=20",
        *extra,
    ]
    return run_in_repo(cmd, timeout=900)


def _results(path):
    with open(path) as f:
        return {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}


def _check_aligned(input_path, predictions_path, labels):
    """Every input line in order; the predicted tag appended to each non-blank one."""
    with open(input_path) as f:
        inputs = f.read().split("\n")
    with open(predictions_path) as f:
        outputs = f.read().split("\n")
    assert len(outputs) == len(inputs)
    gold, predicted = [[]], [[]]
    for line, out in zip(inputs, outputs, strict=True):
        if not line.strip():
            assert out == ""
            if gold[-1]:
                gold.append([])
                predicted.append([])
            continue
        # conlleval.pl's layout: the line's columns one space apart, then the predicted tag.
        columns = " ".join(line.split())
        assert out.startswith(columns + " ")
        tag = out[len(columns) + 1 :]
        assert tag in labels
        if line.startswith("-DOCSTART-"):
            assert tag == "O"
        else:
            gold[-1].append(line.split()[-1])
            predicted[-1].append(tag)
    return [g for g in gold if g], [p for p in predicted if p]


def test_ner_task_loss_is_the_mean_over_labelled_positions(original_gelu):
    """`NerTask`'s logits and loss from the original encoder's sequence output: a [C, H]
    projection of every token, cross-entropy averaged over the positions with a label only."""
    ref = original_gelu["ref"]
    config = BertConfig.from_json_file(original_gelu["config"])
    task = NerTask(config, num_labels=5)
    task.build_model()
    tf1_checkpoint.load_tf1_checkpoint(original_gelu["ckpt"], bert_model=task.model.bert)
    rng = np.random.default_rng(3)
    weights = rng.normal(0, 0.5, (5, config.hidden_size)).astype(np.float32)
    bias = rng.normal(0, 0.5, 5).astype(np.float32)
    names = task.variable_map()
    names["cls/ner/output_weights"].assign(weights)
    names["cls/ner/output_bias"].assign(bias)
    batch, seq = ref["input_ids"].shape
    labels = rng.integers(0, 5, (batch, seq)).astype(np.int32)
    labels[rng.random((batch, seq)) < 0.5] = -1
    features = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")}
    features["label_ids"] = labels
    aux = task.forward(features, training=False)

    logits = ref["sequence_output"] @ weights.T + bias  # [B, S, C]
    np.testing.assert_array_equal(aux["predictions"], logits.argmax(-1))
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    mask = labels >= 0
    b, s = np.nonzero(mask)
    expected = -log_probs[b, s, labels[mask]].mean()
    [numerator] = task.loss_numerators(aux)
    [weight] = task.loss_weights(features)
    assert float(weight) == mask.sum()
    np.testing.assert_allclose(float(numerator) / float(weight), expected, rtol=1e-5)
    assert set(task.variable_map()) >= {"cls/ner/output_weights", "cls/ner/output_bias"}


@pytest.mark.slow
def test_conll_2003_end_to_end_with_document_context(minilm_tf1, tmp_path):
    out = tmp_path / "out"
    sentences = len(read_conll(os.path.join(CONLL, "train.txt"), "required").sentences)
    steps = int(sentences / 16 * 3)
    result = _run(
        minilm_tf1,
        out,
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--document_context=true",
        "--num_train_epochs=3",
        f"--eval_every_steps={steps // 2}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Num steps = {steps}" in result.stderr
    assert "not in the checkpoint, kept as initialised: cls/ner/output_weights" in result.stderr
    with open(out / "labels.txt") as f:
        labels = f.read().split()
    assert labels == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]

    # The original's checkpoint layout: the encoder under bert/, the head under cls/ner/.
    shapes = dict(tf.train.list_variables(str(out / f"model.ckpt-{steps}")))
    assert shapes["cls/ner/output_weights"] == [9, 384]
    assert shapes["cls/ner/output_bias"] == [9]
    assert shapes["bert/embeddings/word_embeddings"] == [30522, 384]

    results = _results(out / "eval_results.txt")
    assert set(results) == {
        "eval_accuracy",
        "eval_f1",
        "eval_precision",
        "eval_recall",
        "eval_loss",
        "global_step",
        *(f"eval_f1_{t}" for t in ("LOC", "MISC", "ORG", "PER")),
    }
    # Every dev entity missed would score 0 (the all-"O" baseline); a short fine-tuning of
    # MiniLM on 472 sentences reached 0.52 here.
    assert results["eval_f1"] > 0.3, results
    assert results["eval_loss"] < 0.5
    # A dev evaluation halfway and the final one, scored by conlleval's entity F1.
    history = read_eval_history(out)
    assert [e["step"] for e in history] == [*range(steps // 2, steps, steps // 2), steps]
    assert {e["metric"] for e in history} == {"eval_f1"}
    assert history[-1]["results"] == pytest.approx(results, abs=1e-6)
    words = sum(
        len(s.words) for s in read_conll(os.path.join(CONLL, "dev.txt"), "required").sentences
    )
    assert all(sum(e["predicted_classes"].values()) == words for e in history)
    best = _results(out / "best_checkpoint" / "eval_results.txt")
    assert best["eval_f1"] == pytest.approx(max(e["value"] for e in history), abs=1e-6)

    gold, predicted = _check_aligned(
        os.path.join(CONLL, "dev.txt"), out / "eval_predictions.txt", labels
    )
    assert results["eval_f1"] == pytest.approx(f1_score(gold, predicted), abs=1e-6)
    assert results["eval_precision"] == pytest.approx(precision_score(gold, predicted), abs=1e-6)
    assert results["eval_recall"] == pytest.approx(recall_score(gold, predicted), abs=1e-6)
    with open(out / "eval_predictions.txt") as f:
        scored = subprocess.run(["perl", CONLLEVAL], stdin=f, capture_output=True, text=True)
    assert scored.returncode == 0, scored.stderr
    fb1 = float(scored.stdout.splitlines()[1].split("FB1:")[1])
    assert results["eval_f1"] * 100 == pytest.approx(fb1, abs=0.005)

    test_gold, test_predicted = _check_aligned(
        os.path.join(CONLL, "test.txt"), out / "test_predictions.txt", labels
    )
    test_results = _results(out / "test_results.txt")
    assert test_results["test_f1"] == pytest.approx(f1_score(test_gold, test_predicted), abs=1e-6)

    # Evaluation and prediction again with every batch at the full --max_seq_length, as the
    # original (the run above cut batches to their longest window): the same tags and scores.
    tagged = {
        name: (out / name).read_text() for name in ("eval_predictions.txt", "test_predictions.txt")
    }
    full = _run(
        minilm_tf1,
        out,
        "--do_eval",
        "--do_predict",
        "--document_context=true",
        "--pad_to_max_seq_length",
    )
    assert full.returncode == 0, full.stderr[-3000:]
    for name, text in tagged.items():
        assert (out / name).read_text() == text, name
    again = _results(out / "eval_results.txt")
    assert sorted(again) == sorted(results)
    for key in results:
        assert again[key] == pytest.approx(results[key], abs=1e-5), key

    # Prediction again in bfloat16: the float32 tags but for a few words whose two best tags
    # are within bfloat16's rounding of each other.
    bf16 = _run(
        minilm_tf1,
        out,
        "--do_predict",
        "--document_context=true",
        "--precision=mixed_bfloat16",
    )
    assert bf16.returncode == 0, bf16.stderr[-3000:]
    lines = tagged["test_predictions.txt"].splitlines()
    lines_bf16 = (out / "test_predictions.txt").read_text().splitlines()
    assert [line.rsplit(" ", 1)[0] for line in lines] == [
        line.rsplit(" ", 1)[0] for line in lines_bf16
    ]
    same = np.mean([a == b for a, b in zip(lines, lines_bf16, strict=True) if a])
    assert same >= 0.98, same

    # Evaluation only, from the run's checkpoint and saved label set, without document context
    # and with windows so small that most sentences are split: still every word predicted.
    # A newer checkpoint whose data file a lost machine cut short is skipped with a warning
    # (resuming is the trainer's, as in run_pretraining), and kept.
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(out / f"model.ckpt-{steps}{suffix}", out / f"model.ckpt-{steps + 1}{suffix}")
    damaged = out / f"model.ckpt-{steps + 1}.data-00000-of-00001"
    damaged.write_bytes(damaged.read_bytes()[:1000])
    again = _run(
        minilm_tf1,
        out,
        "--do_eval",
        "--document_context=false",
        "--max_seq_length=12",
        "--doc_stride=4",
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"Skipping checkpoint {out / f'model.ckpt-{steps + 1}'}, which cannot be read" in (
        again.stderr
    )
    assert f"Resumed from {out / f'model.ckpt-{steps}'}" in again.stderr
    assert [p.stat().st_size for p in out.glob(f"model.ckpt-{steps + 1}*.data-*")] == [1000]
    split = _results(out / "eval_results.txt")
    assert split["global_step"] == results["global_step"]
    gold, predicted = _check_aligned(
        os.path.join(CONLL, "dev.txt"), out / "eval_predictions.txt", labels
    )
    assert split["eval_f1"] == pytest.approx(f1_score(gold, predicted), abs=1e-6)
    assert split["eval_f1"] > 0.1, split


def _data_dir(tmp_path, **files):
    for name in ("train", "dev", "test"):
        source = os.path.join(CONLL, f"{name}.txt")
        if name in files:
            (tmp_path / f"{name}.txt").write_text(files[name])
        else:
            shutil.copy(source, tmp_path / f"{name}.txt")
    return tmp_path


@pytest.mark.parametrize(
    "files,extra,message",
    [
        ({"train": "EU B-ORG\nrejects\n"}, [], "train.txt, line 2: 'rejects' has no tag column"),
        ({"train": ""}, [], "train.txt holds no token lines"),
        (
            {"dev": "EU O\n\nParis B-CITY\n"},
            [],
            "dev.txt, line 3: tag 'B-CITY' is not in the label set",
        ),
        ("glue", [], "train.txt, line 1: tag 'String' is not an IOB tag"),
        ({}, ["--label_file=LABELS"], "does not list the tag 'O'"),
    ],
)
def test_bad_input_fails_before_training(minilm_tf1, tmp_path, files, extra, message):
    if files == "glue":
        files = {"train": open(os.path.join(TESTDATA, "glue", "MRPC", "train.tsv")).read()}
    (tmp_path / "data").mkdir()
    data_dir = _data_dir(tmp_path / "data", **files)
    labels = tmp_path / "labels.txt"
    labels.write_text("B-PER\nI-PER\n")
    extra = [e.replace("LABELS", str(labels)) for e in extra]
    out = tmp_path / "out"
    result = _run(minilm_tf1, out, "--do_train", "--do_eval", *extra, data_dir=data_dir)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-3000:]
    # Nothing written: no records, no label set, no checkpoint.
    assert not out.exists() or os.listdir(out) == []


def _conlleval_fb1(path):
    """conlleval.pl's overall FB1 of `path`, run as its users do: no flags, the file on stdin."""
    with open(path) as f:
        scored = subprocess.run(["perl", CONLLEVAL], stdin=f, capture_output=True, text=True)
    assert scored.returncode == 0, scored.stderr
    return float(scored.stdout.splitlines()[1].split("FB1:")[1])


def test_conlleval_scores_the_prediction_files_of_tab_separated_data(tmp_path):
    """An untrained tiny model tags the first sentences of the CoNLL-2003 slice written as
    WNUT is (`token<TAB>tag`): conlleval.pl's default settings read both prediction files and
    agree with eval_results.txt and test_results.txt. (The MiniLM run above scores
    space-separated CoNLL-2003 files the same way.)"""
    data = tmp_path / "data"
    data.mkdir()
    for name in ("dev", "test"):
        with open(os.path.join(CONLL, f"{name}.txt")) as f:
            lines = f.read().split("\n")[:120]
        tabbed = [f"{line.split()[0]}\t{line.split()[-1]}" if line else "" for line in lines]
        (data / f"{name}.txt").write_text("\n".join(tabbed) + "\n")
    write_tiny_config(tmp_path / "bert_config.json", vocab_size=186)
    labels = ["O", *(f"{p}-{t}" for p in "BI" for t in ("LOC", "MISC", "ORG", "PER"))]
    (tmp_path / "labels.txt").write_text("\n".join(labels) + "\n")
    out = tmp_path / "out"
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_ner.py"),
            f"--data_dir={data}",
            f"--vocab_file={os.path.join(TESTDATA, 'glue', 'vocab.txt')}",
            f"--bert_config_file={tmp_path / 'bert_config.json'}",
            f"--label_file={tmp_path / 'labels.txt'}",
            "--do_lower_case=true",
            "--max_seq_length=32",
            # A window of 30 pieces: the default stride (64) would move past it.
            "--doc_stride=15",
            "--eval_batch_size=64",
            "--predict_batch_size=64",
            "--do_eval",
            "--do_predict",
            f"--output_dir={out}",
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    _check_aligned(data / "dev.txt", out / "eval_predictions.txt", labels)
    eval_f1 = _results(out / "eval_results.txt")["eval_f1"]
    assert _conlleval_fb1(out / "eval_predictions.txt") == pytest.approx(eval_f1 * 100, abs=0.005)
    test_f1 = _results(out / "test_results.txt")["test_f1"]
    assert _conlleval_fb1(out / "test_predictions.txt") == pytest.approx(test_f1 * 100, abs=0.005)
