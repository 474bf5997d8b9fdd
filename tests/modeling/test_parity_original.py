"""BertModel, the pretraining heads and their losses against the original modeling.py /
run_pretraining.py."""

import numpy as np
import pytest

from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.heads import PretrainingHeads
from training.tasks import PretrainingTask

TOL = 1e-5


def _inputs(ref):
    return {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")}


def _load(oracle, with_heads):
    config = BertConfig.from_json_file(oracle["config"])
    model = BertModel(config)
    heads = PretrainingHeads(config) if with_heads else None
    tf1_checkpoint.load_tf1_checkpoint(oracle["ckpt"], bert_model=model, pretraining_heads=heads)
    return model, heads


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


@pytest.mark.parametrize("oracle_name", ["original_gelu", "original_relu"])
def test_encoder_outputs_match_original(oracle_name, request):
    oracle = request.getfixturevalue(oracle_name)
    ref = oracle["ref"]
    model, _ = _load(oracle, with_heads=False)
    out = model(_inputs(ref), training=False)
    assert _max_diff(out["embedding_output"], ref["embedding_output"]) <= TOL
    assert len(out["all_encoder_layers"]) == ref["all_encoder_layers"].shape[0]
    for mine, theirs in zip(out["all_encoder_layers"], ref["all_encoder_layers"], strict=True):
        assert _max_diff(mine, theirs) <= TOL
    assert _max_diff(out["sequence_output"], ref["sequence_output"]) <= TOL
    assert _max_diff(out["pooled_output"], ref["pooled_output"]) <= TOL
    np.testing.assert_array_equal(model.embedding_table.numpy(), ref["embedding_table"])


def test_pretraining_heads_match_original(original_gelu):
    ref = original_gelu["ref"]
    model, heads = _load(original_gelu, with_heads=True)
    out = model(_inputs(ref))
    head_out = heads(
        out["sequence_output"],
        out["pooled_output"],
        ref["masked_lm_positions"],
        model.embedding_table,
    )
    log_probs = head_out["masked_lm_logits"] - np.log(
        np.sum(np.exp(head_out["masked_lm_logits"].numpy().astype(np.float64)), -1, keepdims=True)
    )
    assert _max_diff(log_probs, ref["masked_lm_log_probs"]) <= TOL
    # The losses as the training loop computes them (training/tasks.py), from the same weights.
    task = PretrainingTask(model.config)
    task.build_model()
    tf1_checkpoint.load_tf1_checkpoint(
        original_gelu["ckpt"], bert_model=task.model.bert, pretraining_heads=task.model.cls
    )
    names = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")
    features = {**_inputs(ref), **{k: ref[k] for k in names}}
    aux = task.forward(features, training=False)
    mlm_sum, nsp_sum = task.loss_numerators(aux)
    mlm_weight, batch = task.loss_weights(features)
    mlm_loss = mlm_sum / (mlm_weight + task.loss_epsilons[0])
    assert _max_diff(aux["mlm_loss"], ref["masked_lm_example_loss"]) <= TOL
    assert _max_diff(mlm_loss, ref["masked_lm_loss"]) <= TOL
    assert _max_diff(aux["nsp_loss"], ref["next_sentence_example_loss"]) <= TOL
    assert _max_diff(nsp_sum / batch, ref["next_sentence_loss"]) <= TOL


def test_dropout_only_in_training(original_gelu):
    ref = original_gelu["ref"]
    config = BertConfig.from_json_file(original_gelu["config"])
    config.hidden_dropout_prob = 0.3
    config.attention_probs_dropout_prob = 0.3
    model = BertModel(config)
    tf1_checkpoint.load_tf1_checkpoint(original_gelu["ckpt"], bert_model=model)
    inference = model(_inputs(ref), training=False)
    assert _max_diff(inference["sequence_output"], ref["sequence_output"]) <= TOL
    train_a = model(_inputs(ref), training=True)["sequence_output"].numpy()
    train_b = model(_inputs(ref), training=True)["sequence_output"].numpy()
    assert _max_diff(train_a, ref["sequence_output"]) > 1e-2
    assert _max_diff(train_a, train_b) > 1e-2
