"""BertConfig, BertModel and heads: shapes, defaults, validation (tiny config)."""

import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from modeling.activations import gelu, gelu_exact, get_activation
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.heads import ClassifierHead, PretrainingHeads, SpanHead, TokenClassifierHead
from modeling.task_models import BertPretrainer
from tests.helpers.tiny_config import tiny_config as shared_tiny_config

BATCH, SEQ = 13, 7


def tiny_config(**overrides):
    """The tests' tiny configuration with the original modeling_test's 16 token types."""
    return shared_tiny_config(**{"type_vocab_size": 16, **overrides})


def tiny_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "input_ids": rng.integers(0, 99, (BATCH, SEQ)).astype(np.int32),
        "input_mask": rng.integers(0, 2, (BATCH, SEQ)).astype(np.int32),
        "segment_ids": rng.integers(0, 16, (BATCH, SEQ)).astype(np.int32),
    }


def test_config_defaults_and_json(tmp_path):
    config = BertConfig(vocab_size=99, hidden_size=37)
    data = json.loads(config.to_json_string())
    assert data["vocab_size"] == 99 and data["hidden_size"] == 37
    assert data["type_vocab_size"] == 16 and data["hidden_act"] == "gelu"
    assert len(data) == 11
    assert config.to_json_string() == json.dumps(data, indent=2, sort_keys=True) + "\n"
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({"vocab_size": 5, "directionality": "bidi", "pooler_type": "x"}))
    loaded = BertConfig.from_json_file(str(path))
    assert loaded.vocab_size == 5 and loaded.directionality == "bidi"
    assert loaded.hidden_size == 768 and loaded.type_vocab_size == 16


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("hidden_size", 30, "not a multiple of the number of attention heads"),
        ("num_hidden_layers", 0, "num_hidden_layers must be a positive integer, got 0"),
        ("vocab_size", None, "vocab_size must be a positive integer, got None"),
        ("hidden_act", "swish", "unsupported hidden_act 'swish'"),
        ("hidden_dropout_prob", 1.5, r"hidden_dropout_prob must be in \[0, 1\)"),
    ],
)
def test_config_validation(field, value, message):
    config = tiny_config()
    setattr(config, field, value)
    with pytest.raises(ValueError, match=message):
        BertModel(config)


def test_config_file_errors(tmp_path):
    with pytest.raises(ValueError, match="bert_config file not found: .*missing.json"):
        BertConfig.from_json_file(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"vocab_size": 5,\n "hidden_size": }')
    with pytest.raises(ValueError, match=r"bad.json is not valid JSON \(line 2"):
        BertConfig.from_json_file(str(bad))


def test_model_output_shapes_and_defaults():
    model = BertModel(tiny_config())
    out = model(tiny_inputs(), training=True)
    assert out["sequence_output"].shape == (BATCH, SEQ, 32)
    assert out["embedding_output"].shape == (BATCH, SEQ, 32)
    assert out["pooled_output"].shape == (BATCH, 32)
    assert len(out["all_encoder_layers"]) == 2
    assert out["all_encoder_layers"][-1] is out["sequence_output"]
    ids = tiny_inputs()["input_ids"]
    default = model({"input_ids": ids})["sequence_output"]
    explicit = model(
        {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    )["sequence_output"]
    np.testing.assert_array_equal(default, explicit)


def test_padding_is_masked_on_keys():
    """Changing a padded token changes nothing at real positions."""
    model = BertModel(tiny_config())
    inputs = tiny_inputs()
    inputs["input_mask"][:, :4] = 1
    inputs["input_mask"][:, 4:] = 0
    changed = {k: v.copy() for k, v in inputs.items()}
    changed["input_ids"][:, 4:] = (changed["input_ids"][:, 4:] + 1) % 99
    a = model(inputs)["sequence_output"].numpy()[:, :4]
    b = model(changed)["sequence_output"].numpy()[:, :4]
    np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_real_tokens_only_equal_the_padded_computation(policy):
    """`token_positions` (the layers on real tokens only, with spare slots) against the
    original's padded layout: the same outputs and gradients at real positions, for masks
    with holes too."""
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = BertModel(tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
        inputs = tiny_inputs(seed=3)
        inputs["input_mask"][:, 0] = 1  # every example has its [CLS], as real ones do
        real = inputs["input_mask"].astype(bool)
        # The real tokens' flat positions, then 5 unused slots pointing past the end.
        positions = np.concatenate([np.flatnonzero(real), np.full(5, real.size)]).astype(np.int32)

        def run(features):
            with tf.GradientTape() as tape:
                out = model(features, training=True)
                layers = [tf.cast(x, tf.float32) for x in out["all_encoder_layers"]]
                # A loss on real positions only, as every caller's that packs.
                loss = tf.reduce_sum(tf.boolean_mask(tf.square(layers[-1]), real))
                loss += tf.reduce_sum(tf.cast(out["pooled_output"], tf.float32))
            grads = tape.gradient(loss, model.trainable_variables)
            return [x.numpy()[real] for x in layers], out["pooled_output"], grads

        padded = run(inputs)
        packed = run({**inputs, "token_positions": positions})
        atol = 1e-5 if policy == "float32" else 0.0
        for a, b in zip(padded[0], packed[0], strict=True):
            np.testing.assert_allclose(a, b, atol=atol)
        np.testing.assert_allclose(padded[1], packed[1], atol=atol)
        for a, b in zip(padded[2], packed[2], strict=True):
            a, b = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
            # Sums run in another order: within float32 rounding of the largest (bfloat16: a few
            # of its units, 2^-8); the key biases' gradients are zero up to that rounding.
            scale = (1e-5 if policy == "float32" else 2e-2) * max(np.abs(a).max(), 1e-3)
            np.testing.assert_allclose(a, b, atol=scale)
        # Padding positions are not computed: zeros.
        out = model({**inputs, "token_positions": positions})["sequence_output"].numpy()
        assert not out[~real].any() and out[real].any()
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_sequence_longer_than_positions_is_an_error():
    model = BertModel(tiny_config(max_position_embeddings=5))
    with pytest.raises(ValueError, match="Sequence length 7 exceeds max_position_embeddings"):
        model({"input_ids": np.zeros((1, 7), np.int32)})


def test_initializers():
    model = BertModel(tiny_config(vocab_size=3000, initializer_range=0.02))
    table = model.embedding_table.numpy()
    assert abs(table.std() - 0.02 * 0.8796) < 2e-3  # truncated at 2 stddev
    assert np.abs(table).max() <= 0.04 + 1e-7
    layer = model.encoder.transformer_layers[0]
    np.testing.assert_array_equal(layer.attention.self_attention.query.bias.numpy(), 0.0)
    np.testing.assert_array_equal(layer.output_block.layer_norm.gamma.numpy(), 1.0)


def test_activations():
    x = tf.constant(np.linspace(-4, 4, 101), tf.float32)
    xs = x.numpy().astype(np.float64)
    tanh_form = 0.5 * xs * (1 + np.tanh(math.sqrt(2 / math.pi) * (xs + 0.044715 * xs**3)))
    erf_form = xs * 0.5 * (1 + np.vectorize(math.erf)(xs / math.sqrt(2)))
    np.testing.assert_allclose(gelu(x), tanh_form, atol=1e-6)
    np.testing.assert_allclose(gelu_exact(x), erf_form, atol=1e-6)
    assert np.abs(tanh_form - erf_form).max() > 1e-4
    assert get_activation("linear") is None and get_activation("") is None
    assert get_activation("RELU") is tf.nn.relu
    with pytest.raises(ValueError, match="Unsupported activation: swish"):
        get_activation("swish")


def test_heads_shapes():
    config = tiny_config()
    model = BertModel(config)
    out = model(tiny_inputs())
    positions = np.tile(np.arange(3, dtype=np.int32), (BATCH, 1))
    heads = PretrainingHeads(config)
    head_out = heads(out["sequence_output"], out["pooled_output"], positions, model.embedding_table)
    assert head_out["masked_lm_logits"].shape == (BATCH * 3, 99)
    assert head_out["next_sentence_logits"].shape == (BATCH, 2)
    assert ClassifierHead(3, config)(out["pooled_output"]).shape == (BATCH, 3)
    start, end = SpanHead(config)(out["sequence_output"])
    assert start.shape == end.shape == (BATCH, SEQ)
    assert TokenClassifierHead(5, config)(out["sequence_output"]).shape == (BATCH, SEQ, 5)


def test_span_head_start_is_row_0_and_end_row_1_of_the_original_weights():
    """As the original's run_squad: logits = sequence_output . output_weights^T + output_bias
    over `cls/squad/output_weights [2, H]`, row 0 the start logits and row 1 the end logits."""
    config = tiny_config()
    sequence_output = np.random.default_rng(3).normal(size=(BATCH, SEQ, 32)).astype(np.float32)
    head = SpanHead(config)
    weights = np.random.default_rng(4).normal(size=(2, 32)).astype(np.float32)
    bias = np.array([0.5, -1.5], np.float32)
    head.projection.output_weights.assign(weights)
    head.projection.output_bias.assign(bias)
    start, end = head(tf.constant(sequence_output))
    np.testing.assert_allclose(start.numpy(), sequence_output @ weights[0] + bias[0], atol=1e-5)
    np.testing.assert_allclose(end.numpy(), sequence_output @ weights[1] + bias[1], atol=1e-5)


def test_masked_lm_head_gathers_only_masked_positions():
    config = tiny_config()
    model, heads = BertModel(config), PretrainingHeads(config)
    out = model(tiny_inputs())
    positions = np.array([[2, 5]] * BATCH, np.int32)
    logits = heads(out["sequence_output"], out["pooled_output"], positions, model.embedding_table)[
        "masked_lm_logits"
    ].numpy()
    seq = out["sequence_output"].numpy()
    hidden = heads.predictions.transform(seq[1, 5][None]).numpy()
    expected = hidden @ model.embedding_table.numpy().T + heads.predictions.output_bias.numpy()
    np.testing.assert_allclose(logits[1 * 2 + 1], expected[0], atol=1e-5)


def test_keras_config_round_trip():
    model = BertModel(tiny_config(hidden_act="gelu_exact"))
    clone = BertModel.from_config(model.get_config())
    assert clone.config == model.config
    pre = BertPretrainer(tiny_config())
    assert BertPretrainer.from_config(pre.get_config()).config == pre.config


def test_pretrainer_without_masked_positions():
    """--max_predictions_per_seq=0 (which the original ran): no masked-LM logits, the same
    [CLS] output as with positions."""
    pre = BertPretrainer(tiny_config())
    inputs = tiny_inputs(0)
    none = pre({**inputs, "masked_lm_positions": np.zeros((BATCH, 0), np.int32)})
    some = pre({**inputs, "masked_lm_positions": np.ones((BATCH, 2), np.int32)})
    assert none["masked_lm_logits"].shape[0] == 0
    np.testing.assert_allclose(
        none["next_sentence_logits"].numpy(), some["next_sentence_logits"].numpy(), atol=1e-6
    )


def _read_rows(seed):
    """A batch with [CLS] real, and for each example masked positions among its real tokens
    plus position-0 fillers (the zero-weight predictions of short examples)."""
    rng = np.random.default_rng(seed)
    inputs = tiny_inputs(seed)
    inputs["input_mask"][:, 0] = 1
    positions = np.zeros((BATCH, 3), np.int32)
    for b in range(BATCH):
        real = np.flatnonzero(inputs["input_mask"][b])
        chosen = rng.choice(real, size=min(2, len(real)), replace=False)
        positions[b, : len(chosen)] = chosen
    return inputs, positions


def _real_token_slots(inputs, unused):
    """`token_positions` of the batch: the flat positions of its real tokens, then `unused`
    slots past the end."""
    flat = np.flatnonzero(inputs["input_mask"].reshape(-1)).astype(np.int32)
    return np.concatenate([flat, np.full(unused, BATCH * SEQ, np.int32)])


def _assert_same_gradients(tape, fast_loss, full_loss, variables):
    fast_grads = tape.gradient(fast_loss, variables)
    full_grads = tape.gradient(full_loss, variables)
    for v, a, b in zip(variables, fast_grads, full_grads, strict=True):
        # Gradients reach |40| here, where float32 sums in another order differ by a few units
        # of the last place: measured up to 1.3e-5 absolute, 1.2e-6 relative.
        np.testing.assert_allclose(
            tf.convert_to_tensor(a), tf.convert_to_tensor(b), rtol=1e-5, atol=1e-5, err_msg=v.path
        )


def test_pretrainer_last_layer_on_read_rows_equals_the_full_layer():
    """BertPretrainer computes the last layer at [CLS] and the masked positions only; the
    logits and every gradient equal the full layer followed by the heads' gather."""
    keras.utils.set_random_seed(3)
    pre = BertPretrainer(tiny_config(num_hidden_layers=3))
    inputs, positions = _read_rows(4)
    weights = tf.constant(np.random.default_rng(5).normal(size=(BATCH * 3, 99)), tf.float32)

    def loss_of(out):
        return tf.reduce_sum(out["masked_lm_logits"] * weights) + tf.reduce_sum(
            out["next_sentence_logits"] * tf.range(2, dtype=tf.float32)
        )

    with tf.GradientTape(persistent=True) as tape:
        fast = pre({**inputs, "masked_lm_positions": positions})
        full_bert = pre.bert(inputs)
        full = pre.cls(
            full_bert["sequence_output"],
            full_bert["pooled_output"],
            positions,
            pre.bert.embedding_table,
        )
        fast_loss, full_loss = loss_of(fast), loss_of(full)
    for name in ("masked_lm_logits", "next_sentence_logits"):
        np.testing.assert_allclose(fast[name], full[name], atol=1e-5)
    _assert_same_gradients(tape, fast_loss, full_loss, pre.trainable_variables)
    # The last layer's queries really are cut: 1 + P rows, not S.
    assert pre.bert({**inputs, "output_positions": positions})["sequence_output"].shape == (
        BATCH,
        3,
        tiny_config().hidden_size,
    )


def test_read_rows_with_packed_tokens_equal_the_full_layer():
    """output_positions together with token_positions (the real tokens only through the
    layers): the rows equal the padded model's."""
    model = BertModel(tiny_config(num_hidden_layers=2))
    inputs, positions = _read_rows(6)
    full = model(inputs)["sequence_output"].numpy()
    slots = _real_token_slots(inputs, unused=4)
    # [CLS] first, as the pooled output reads the first row.
    positions = np.concatenate([np.zeros((BATCH, 1), np.int32), positions], axis=1)
    rows = model({**inputs, "token_positions": slots, "output_positions": positions})
    expected = np.take_along_axis(full, positions[:, :, None], axis=1)
    np.testing.assert_allclose(rows["sequence_output"], expected, atol=1e-5)
    np.testing.assert_allclose(rows["pooled_output"], model(inputs)["pooled_output"], atol=1e-5)


@pytest.mark.parametrize("packed", [False, True])
def test_classifier_last_layer_at_cls_equals_the_full_layer(packed):
    """BertClassifier computes the last layer at [CLS] only (on the real tokens only too):
    logits and every gradient equal the full model's pooled output through the head."""
    from modeling.task_models import BertClassifier

    keras.utils.set_random_seed(7)
    model = BertClassifier(tiny_config(num_hidden_layers=2), num_labels=3)
    inputs, _ = _read_rows(8)
    if packed:
        inputs["token_positions"] = _real_token_slots(inputs, unused=3)
    weights = tf.constant(np.random.default_rng(9).normal(size=(BATCH, 3)), tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        fast = model(inputs)
        full_inputs = {k: v for k, v in inputs.items() if k != "token_positions"}
        full = model.classifier(model.bert(full_inputs)["pooled_output"])
        fast_loss, full_loss = tf.reduce_sum(fast * weights), tf.reduce_sum(full * weights)
    np.testing.assert_allclose(fast, full, atol=1e-5)
    _assert_same_gradients(tape, fast_loss, full_loss, model.trainable_variables)


def _op_types(graph_def):
    """Every op type of a GraphDef and of the functions in its library."""
    types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        types |= {node.op for node in function.node_def}
    return types


def test_no_task_model_runs_the_einsum_kernel():
    """TensorFlow 2.20's oneDNN Einsum kernel corrupts the heap on CPUs now and then
    (docs/when_something_goes_wrong.md): no model's training step, forward or backward, may
    contain an Einsum op; attention is batched matmuls, as in the original."""
    from modeling.task_models import BertClassifier, BertSpanModel, BertTokenClassifier

    config = tiny_config()
    inputs = {k: tf.constant(v) for k, v in tiny_inputs(0).items()}
    models = {
        "classifier": BertClassifier(config, num_labels=3),
        "span": BertSpanModel(config),
        "token classifier": BertTokenClassifier(config, num_labels=5),
        "pretrainer": BertPretrainer(config),
    }
    for name, model in models.items():
        features = dict(inputs)
        if name == "pretrainer":
            features["masked_lm_positions"] = tf.ones((BATCH, 2), tf.int32)

        @tf.function
        def step(features, model=model):
            with tf.GradientTape() as tape:
                outputs = tf.nest.flatten(model(features, training=True))
                loss = tf.add_n([tf.reduce_sum(o) for o in outputs])
            return tape.gradient(loss, model.trainable_variables)

        types = _op_types(step.get_concrete_function(features).graph.as_graph_def())
        assert "Einsum" not in types, name
        assert "BatchMatMulV2" in types and "MatMul" in types, name
