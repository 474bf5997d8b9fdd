"""The tasks' heads, losses and metrics (training/tasks.py) against the original's
run_pretraining, run_classifier and run_squad code."""

import os
import sys

import numpy as np
import pytest

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


@pytest.mark.slow
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


def _head_problem(original_gelu, tmp_path, heads, labels):
    """The oracle checkpoint plus random head weights (`heads`: name -> shape), its config
    without dropout, and the reference batch with `labels` added."""
    import json

    rng = np.random.default_rng(5)
    arrays = tf1_checkpoint.read_checkpoint(original_gelu["ckpt"])
    for name, shape in heads.items():
        arrays[name] = rng.normal(0, 0.5, shape).astype(np.float32)
    ckpt = tf1_checkpoint.save_tf1_checkpoint(arrays, str(tmp_path / "ckpt" / "model.ckpt"))
    with open(original_gelu["config"]) as f:
        config = json.load(f)
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    ref = original_gelu["ref"]
    batch = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")}
    batch.update({k: v(rng, batch["input_ids"].shape) for k, v in labels.items()})
    np.savez(tmp_path / "inputs.npz", **batch)
    return ckpt, BertConfig.from_json_file(str(tmp_path / "bert_config.json")), batch


def _original_head(task, tmp_path, ckpt, *extra):
    from tests.oracles import run_oracle

    out = tmp_path / "original.npz"
    run_oracle(
        "original_task_heads",
        [
            f"--task={task}",
            f"--bert_config_file={tmp_path / 'bert_config.json'}",
            f"--init_checkpoint={ckpt}",
            f"--inputs={tmp_path / 'inputs.npz'}",
            f"--out={out}",
            *extra,
        ],
    )
    return dict(np.load(out))


def _loss(task, aux, features):
    terms = task.loss_numerators(aux)
    weights = task.loss_weights(features)
    return sum(
        float(n) / (float(w) + eps)
        for n, w, eps in zip(terms, weights, task.loss_epsilons, strict=True)
    )


def test_classifier_head_and_loss_match_the_original(original_gelu, tmp_path):
    """ClassifierTask against run_classifier.create_model (is_training=False) on the same
    checkpoint and batch: logits, probabilities, per-example and mean loss."""
    from training.tasks import ClassifierTask

    hidden = 32
    ckpt, config, batch = _head_problem(
        original_gelu,
        tmp_path,
        {"output_weights": (3, hidden), "output_bias": (3,)},
        {"label_ids": lambda rng, shape: rng.integers(0, 3, shape[0]).astype(np.int32)},
    )
    original = _original_head("classifier", tmp_path, ckpt, "--num_labels=3")
    task = ClassifierTask(config, 3)
    task.build_model()
    tf1_checkpoint.assign_arrays(
        task.variable_map(), tf1_checkpoint.read_checkpoint(ckpt), source=ckpt, strict=False
    )
    aux = task.forward(batch, training=False)
    # Measured: logits 1.1e-6, probabilities 2.7e-7, per-example losses 4.8e-7 apart; the
    # loss 1.6e-7 relative.
    np.testing.assert_allclose(aux["logits"], original["logits"], atol=1e-5)
    np.testing.assert_allclose(aux["predictions"], original["probabilities"], atol=3e-6)
    np.testing.assert_allclose(aux["per_example_loss"], original["per_example_loss"], atol=5e-6)
    np.testing.assert_allclose(_loss(task, aux, batch), original["loss"], rtol=2e-6)


def test_regression_loss_is_the_mean_squared_error(original_gelu, tmp_path):
    """STS-B (the original has no regression): one output, and the loss scikit-learn's mean
    squared error of it; padding examples count for nothing."""
    from sklearn.metrics import mean_squared_error

    from training.tasks import ClassifierTask

    ref = original_gelu["ref"]
    config = BertConfig.from_json_file(original_gelu["config"])
    task = ClassifierTask(config, 1, is_regression=True)
    task.build_model()
    tf1_checkpoint.load_tf1_checkpoint(original_gelu["ckpt"], bert_model=task.model.bert)
    batch = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")}
    batch["label_ids"] = np.array([0.5, 4.0, 2.25, 3.0], np.float32)
    batch["is_real_example"] = np.array([1, 1, 1, 0], np.int32)
    aux = task.forward(batch, training=False)
    scores = aux["predictions"].numpy()
    assert aux["logits"].shape == (4, 1)
    expected = mean_squared_error(batch["label_ids"][:3], scores[:3])
    # Measured: 2.3e-8 relative.
    np.testing.assert_allclose(_loss(task, aux, batch), expected, rtol=1e-6)


@pytest.mark.slow
def test_squad_head_and_loss_match_the_original(original_gelu, tmp_path):
    """SquadTask against run_squad's model_fn: PREDICT mode's start and end logits (every
    position, padding included) and TRAIN mode's loss (without dropout)."""
    from training.tasks import SquadTask

    def positions(rng, shape):
        return rng.integers(0, shape[1], shape[0]).astype(np.int32)

    hidden = 32
    ckpt, config, batch = _head_problem(
        original_gelu,
        tmp_path,
        {"cls/squad/output_weights": (2, hidden), "cls/squad/output_bias": (2,)},
        {"start_positions": positions, "end_positions": positions},
    )
    original = _original_head("squad", tmp_path, ckpt)
    task = SquadTask(config)
    task.build_model()
    tf1_checkpoint.assign_arrays(
        task.variable_map(), tf1_checkpoint.read_checkpoint(ckpt), source=ckpt, strict=False
    )
    aux = task.forward(batch, training=False)
    # Measured: logits up to 3.3e-6 apart (head weights of 0.5 over 32 units magnify the
    # encoder's float32 rounding); the loss 3.8e-8 relative.
    np.testing.assert_allclose(aux["start_logits"], original["start_logits"], atol=3e-5)
    np.testing.assert_allclose(aux["end_logits"], original["end_logits"], atol=3e-5)
    np.testing.assert_allclose(_loss(task, aux, batch), original["loss"], rtol=1e-6)
