"""The tasks' losses and metrics (training/tasks.py) against the original run_pretraining."""

import os
import sys

import numpy as np

from modeling import tf1_checkpoint
from modeling.config import BertConfig
from tests.helpers.scripts import REPO, run_in_repo
from training.tasks import PretrainingTask


def test_task_losses_match_the_original(original_gelu):
    """The task's loss terms reproduce run_pretraining's get_masked_lm_output and
    get_next_sentence_output (oracle) on a padded batch with zero-weight predictions."""
    ref = original_gelu["ref"]
    config = BertConfig.from_json_file(original_gelu["config"])
    task = PretrainingTask(config)
    task.build_model()
    tf1_checkpoint.load_tf1_checkpoint(
        original_gelu["ckpt"], bert_model=task.model.bert, pretraining_heads=task.model.cls
    )
    features = {
        k: ref[k]
        for k in (
            "input_ids",
            "input_mask",
            "segment_ids",
            "masked_lm_positions",
            "masked_lm_ids",
            "masked_lm_weights",
            "next_sentence_labels",
        )
    }
    aux = task.forward(features, training=False)
    numerators = task.loss_numerators(aux)
    weights = task.loss_weights(features)
    mlm = numerators[0] / (weights[0] + task.loss_epsilons[0])
    nsp = numerators[1] / (weights[1] + task.loss_epsilons[1])
    np.testing.assert_allclose(mlm, ref["masked_lm_loss"], atol=1e-5)
    np.testing.assert_allclose(nsp, ref["next_sentence_loss"], atol=1e-5)
    np.testing.assert_allclose(aux["mlm_loss"], ref["masked_lm_example_loss"], atol=1e-5)
    sums = task.metric_sums(aux)
    w = ref["masked_lm_weights"].reshape(-1)
    predicted = np.argmax(ref["masked_lm_log_probs"], -1)
    expected_acc = np.sum(w * (predicted == ref["masked_lm_ids"].reshape(-1))) / np.sum(w)
    np.testing.assert_allclose(
        sums["masked_lm_accuracy"][0] / sums["masked_lm_accuracy"][1], expected_acc, atol=1e-6
    )


def test_task_losses_match_the_original_on_real_pretraining_data(tmp_path):
    """A batch written by create_pretraining_data.py, a fixed random checkpoint: the task's
    losses and metrics equal the original get_masked_lm_output/get_next_sentence_output."""
    from tests.oracles import run_oracle

    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away", "##s", "."]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    vocab += [f"[unused{i}]" for i in range(99 - len(vocab))]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    rng = np.random.default_rng(5)
    docs = [
        "\n".join(
            " ".join(rng.choice(words[:10], rng.integers(3, 9))) + " ."
            for _ in range(rng.integers(2, 6))
        )
        for _ in range(30)
    ]
    (tmp_path / "corpus.txt").write_text("\n\n".join(docs) + "\n")
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "create_pretraining_data.py"),
            f"--input_file={tmp_path / 'corpus.txt'}",
            f"--output_file={tmp_path / 'data.tfrecord'}",
            f"--vocab_file={tmp_path / 'vocab.txt'}",
            "--max_seq_length=16",
            "--max_predictions_per_seq=4",
            "--dupe_factor=1",
        ],
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    from data.records import input_pipeline

    batch = next(
        iter(
            input_pipeline.pretraining_dataset(
                [str(tmp_path / "data.tfrecord")], 16, 4, 4, is_training=False
            )
        )
    )
    batch = {k: v.numpy() for k, v in batch.items()}
    batch["next_sentence_labels"] = batch["next_sentence_labels"].reshape(-1)
    np.savez(tmp_path / "batch.npz", **batch)
    run_oracle(
        "original_bert",
        ["--out_dir", tmp_path / "oracle", "--with_heads", "--inputs", tmp_path / "batch.npz"],
    )
    ref = dict(np.load(tmp_path / "oracle" / "reference.npz"))
    config = BertConfig.from_json_file(str(tmp_path / "oracle" / "bert_config.json"))
    task = PretrainingTask(config)
    task.build_model()
    tf1_checkpoint.load_tf1_checkpoint(
        str(tmp_path / "oracle" / "bert_model.ckpt"),
        bert_model=task.model.bert,
        pretraining_heads=task.model.cls,
    )
    aux = task.forward(batch, training=False)
    numerators, weights = task.loss_numerators(aux), task.loss_weights(batch)
    np.testing.assert_allclose(
        numerators[0] / (weights[0] + 1e-5), ref["masked_lm_loss"], atol=1e-5
    )
    np.testing.assert_allclose(numerators[1] / weights[1], ref["next_sentence_loss"], atol=1e-5)
    sums = task.metric_sums(aux)
    w = batch["masked_lm_weights"].reshape(-1)
    expected = np.sum(
        w * (np.argmax(ref["masked_lm_log_probs"], -1) == batch["masked_lm_ids"].reshape(-1))
    ) / np.sum(w)
    np.testing.assert_allclose(
        sums["masked_lm_accuracy"][0] / sums["masked_lm_accuracy"][1], expected, atol=1e-6
    )
    nsp_expected = np.mean(
        np.argmax(ref["next_sentence_log_probs"], -1) == batch["next_sentence_labels"]
    )
    np.testing.assert_allclose(
        sums["next_sentence_accuracy"][0] / sums["next_sentence_accuracy"][1],
        nsp_expected,
        atol=1e-6,
    )
