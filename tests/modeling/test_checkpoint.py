"""Original checkpoint names in and out: the name table, strict loading, saving, conversion."""

import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.formats import conversion
from modeling.heads import ClassifierHead, PretrainingHeads, SpanHead, TokenClassifierHead
from modeling.layers import weights_from_checkpoint
from tests.helpers.paths import REPO
from tests.helpers.scripts import run_in_repo
from tests.helpers.tiny_config import tiny_config
from tests.oracles import run_oracle


def _original_names(oracle):
    with open(os.path.join(oracle["dir"], "variables.json")) as f:
        listed = json.load(f)
    return {n: tuple(s) for n, s in listed if not tf1_checkpoint.is_training_state(n)}


def test_every_original_name_maps_to_one_variable(original_gelu):
    config = BertConfig.from_json_file(original_gelu["config"])
    model = BertModel(config)
    heads = PretrainingHeads(config)
    names = tf1_checkpoint.build_variable_map(bert_model=model, pretraining_heads=heads)
    expected = _original_names(original_gelu)
    # Both directions: the same name set, the same shapes.
    assert {n: tuple(v.shape) for n, v in names.items()} == expected
    # Each name has its own variable, and the table covers every variable of the model.
    assert len({id(v) for v in names.values()}) == len(names)
    owned = {id(v) for v in model.weights + heads.weights}
    assert owned == {id(v) for v in names.values()}
    # Keras paths spell the original names, which the optimizer's decay exclusions rely on.
    assert all(v.path == n for n, v in names.items())


def test_task_head_names():
    config = tiny_config()
    shapes = {
        n: tuple(v.shape)
        for n, v in tf1_checkpoint.build_variable_map(
            classifier=ClassifierHead(3, config),
            span=SpanHead(config),
            token_classifier=TokenClassifierHead(5, config),
        ).items()
    }
    assert shapes == {
        "output_weights": (3, 32),
        "output_bias": (3,),
        "cls/squad/output_weights": (2, 32),
        "cls/squad/output_bias": (2,),
        "cls/ner/output_weights": (5, 32),
        "cls/ner/output_bias": (5,),
    }


def test_optimizer_slots_and_global_step_are_ignored(original_gelu):
    everything = tf1_checkpoint.read_checkpoint(original_gelu["ckpt"], include_optimizer=True)
    assert "global_step" in everything
    assert any(n.endswith("/adam_m") for n in everything)
    weights = tf1_checkpoint.read_checkpoint(original_gelu["ckpt"])
    assert set(weights) == set(_original_names(original_gelu))


def test_save_round_trip_is_bit_identical(original_gelu, tmp_path):
    config = BertConfig.from_json_file(original_gelu["config"])
    model, heads = BertModel(config), PretrainingHeads(config)
    tf1_checkpoint.load_tf1_checkpoint(
        original_gelu["ckpt"], bert_model=model, pretraining_heads=heads
    )
    names = tf1_checkpoint.build_variable_map(bert_model=model, pretraining_heads=heads)
    prefix = tf1_checkpoint.save_tf1_checkpoint(
        tf1_checkpoint.variables_to_arrays(names), str(tmp_path / "bert_model.ckpt")
    )
    assert sorted(os.listdir(tmp_path)) == [
        "bert_model.ckpt.data-00000-of-00001",
        "bert_model.ckpt.index",
    ]
    reader = tf.train.load_checkpoint(prefix)
    original = tf1_checkpoint.read_checkpoint(original_gelu["ckpt"])
    assert reader.get_variable_to_shape_map() == {n: list(a.shape) for n, a in original.items()}
    for name, value in original.items():
        assert reader.get_variable_to_dtype_map()[name] == tf.float32
        np.testing.assert_array_equal(reader.get_tensor(name), value)


def test_models_built_for_a_checkpoint_skip_the_random_draws(original_gelu):
    """Inside `weights_from_checkpoint` no variable is drawn at random; the strict load then
    gives the original's outputs, and a checkpoint that misses a variable is still refused."""
    config = BertConfig.from_json_file(original_gelu["config"])
    with weights_from_checkpoint():
        model, heads = BertModel(config), PretrainingHeads(config)
    names = tf1_checkpoint.build_variable_map(bert_model=model, pretraining_heads=heads)
    for name, var in names.items():
        # LayerNorm scales start at one, everything else at zero.
        assert np.all(var.numpy() == (1.0 if name.endswith("/gamma") else 0.0)), name
    # Outside the block the draws are back.
    drawn = BertModel(config).embeddings.word_embeddings.numpy()
    assert 0.5 * config.initializer_range < drawn.std() < config.initializer_range

    tf1_checkpoint.load_tf1_checkpoint(
        original_gelu["ckpt"], bert_model=model, pretraining_heads=heads
    )
    ref = original_gelu["ref"]
    out = model({k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(out["sequence_output"], ref["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(out["pooled_output"], ref["pooled_output"], atol=1e-5)

    arrays = tf1_checkpoint.read_checkpoint(original_gelu["ckpt"])
    del arrays["bert/pooler/dense/kernel"]
    with weights_from_checkpoint():
        fresh = BertModel(config)
    with pytest.raises(ValueError, match="bert/pooler/dense/kernel"):
        tf1_checkpoint.assign_arrays(tf1_checkpoint.build_variable_map(bert_model=fresh), arrays)


def test_original_code_restores_a_saved_checkpoint(original_gelu, tmp_path):
    """Weights changed here, saved in the original layout, restored by the original code with
    its own assignment map, give the same outputs as the Keras model."""
    config = BertConfig.from_json_file(original_gelu["config"])
    model, heads = BertModel(config), PretrainingHeads(config)
    names = tf1_checkpoint.build_variable_map(bert_model=model, pretraining_heads=heads)
    rng = np.random.default_rng(11)
    for var in names.values():
        var.assign(var.numpy() + rng.normal(0, 0.1, var.shape).astype(np.float32))
    ckpt_dir = tmp_path / "ours"
    prefix = tf1_checkpoint.save_tf1_checkpoint(
        tf1_checkpoint.variables_to_arrays(names), str(ckpt_dir / "bert_model.ckpt")
    )
    config.to_json_file(str(ckpt_dir / "bert_config.json"))
    out_dir = tmp_path / "restored"
    run_oracle(
        "original_bert",
        [
            "--out_dir",
            out_dir,
            "--init_checkpoint",
            prefix,
            "--bert_config_file",
            ckpt_dir / "bert_config.json",
        ],
    )
    ref = dict(np.load(out_dir / "reference.npz"))
    out = model({k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(out["sequence_output"], ref["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(out["pooled_output"], ref["pooled_output"], atol=1e-5)


@pytest.mark.slow
def test_model_garden_encoder_agrees(original_gelu, tmp_path):
    """Google's independent TF2 BertEncoder, loaded with its own converter, gives the same
    sequence and pooled outputs from the same checkpoint."""
    ref = original_gelu["ref"]
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **{k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
    out_path = tmp_path / "model_garden.npz"
    run_oracle(
        "model_garden",
        [
            "--checkpoint",
            original_gelu["ckpt"],
            "--bert_config_file",
            original_gelu["config"],
            "--inputs",
            inputs,
            "--out",
            out_path,
        ],
    )
    theirs = np.load(out_path)
    config = BertConfig.from_json_file(original_gelu["config"])
    model = BertModel(config)
    tf1_checkpoint.load_tf1_checkpoint(original_gelu["ckpt"], bert_model=model)
    ours = model({k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(ours["sequence_output"], theirs["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(ours["pooled_output"], theirs["pooled_output"], atol=1e-5)


def test_mismatched_config_lists_every_problem(original_gelu):
    config = BertConfig.from_json_file(original_gelu["config"])
    config.intermediate_size = 36
    config.num_hidden_layers = 2
    model = BertModel(config)
    with pytest.raises(ValueError) as err:
        tf1_checkpoint.load_tf1_checkpoint(original_gelu["ckpt"], bert_model=model)
    message = str(err.value)
    assert (
        "shape mismatch: bert/encoder/layer_0/intermediate/dense/kernel: "
        "checkpoint [32, 37] vs model [32, 36]"
    ) in message
    assert "unexpected in checkpoint: bert/encoder/layer_2/output/dense/bias [32]" in message
    assert "--bert_config_file" in message
    config.num_hidden_layers = 4
    config.intermediate_size = 37
    with pytest.raises(ValueError, match="missing in checkpoint: bert/encoder/layer_3/"):
        tf1_checkpoint.load_tf1_checkpoint(original_gelu["ckpt"], bert_model=BertModel(config))


@pytest.mark.parametrize("overrides", [{}, {"num_hidden_layers": 3, "intermediate_size": 20}])
def test_encoder_shapes_are_the_built_models(overrides):
    """The shapes read from the config alone are those of the model the config builds."""
    config = tiny_config(**overrides)
    built = tf1_checkpoint.encoder_variable_map(BertModel(config))
    assert tf1_checkpoint.encoder_shapes(config) == {n: tuple(v.shape) for n, v in built.items()}


def test_encoder_misfits_follow_the_fine_tuning_load(original_gelu):
    """What the fine-tuning runs' load (`strict=False`) would refuse, read from the index: the
    original's checkpoint, with heads, optimizer slots and global_step, fits its own config and
    a deeper one (the extra layers keep their initial values), not a narrower or shallower."""
    config = BertConfig.from_json_file(original_gelu["config"])
    layers = config.num_hidden_layers
    assert tf1_checkpoint.encoder_misfits(original_gelu["ckpt"], config) == []
    config.num_hidden_layers = layers + 1
    assert tf1_checkpoint.encoder_misfits(original_gelu["ckpt"], config) == []
    config.num_hidden_layers = layers - 1
    misfits = tf1_checkpoint.encoder_misfits(original_gelu["ckpt"], config)
    # 16 weights per layer, each named.
    assert len(misfits) == 16 and all(f"/layer_{layers - 1}/" in m for m in misfits)
    assert misfits[0] == (
        f"bert/encoder/layer_{layers - 1}/attention/output/LayerNorm/beta [32] is not in the "
        "config's model"
    )
    config.num_hidden_layers, config.intermediate_size = layers, 36
    assert tf1_checkpoint.encoder_misfits(original_gelu["ckpt"], config) == [
        f"bert/encoder/layer_{i}/{name} is [{shape}] where the config's model has [{fits}]"
        for i in range(layers)
        for name, shape, fits in (
            ("intermediate/dense/bias", "37", "36"),
            ("intermediate/dense/kernel", "32, 37", "32, 36"),
            ("output/dense/kernel", "37, 32", "36, 32"),
        )
    ]


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="Checkpoint not found: .*nope/bert_model.ckpt"):
        tf1_checkpoint.resolve_checkpoint_path(str(tmp_path / "nope" / "bert_model.ckpt"))
    with pytest.raises(ValueError, match="No checkpoint found in folder"):
        tf1_checkpoint.resolve_checkpoint_path(str(tmp_path))


def test_non_strict_load_keeps_task_heads(original_gelu):
    config = BertConfig.from_json_file(original_gelu["config"])
    model, head = BertModel(config), ClassifierHead(2, config)
    before = head.projection.output_weights.numpy()
    loaded = tf1_checkpoint.load_tf1_checkpoint(
        original_gelu["ckpt"], strict=False, bert_model=model, classifier=head
    )
    assert "output_weights" not in loaded and len(loaded) == len(model.weights)
    np.testing.assert_array_equal(head.projection.output_weights.numpy(), before)
    with pytest.raises(ValueError, match="missing in checkpoint: output_weights"):
        tf1_checkpoint.load_tf1_checkpoint(original_gelu["ckpt"], bert_model=model, classifier=head)


def _convert(*args):
    cmd = [sys.executable, os.path.join(REPO, "convert_checkpoint.py"), *map(str, args)]
    return run_in_repo(cmd, timeout=300)


@pytest.mark.slow
def test_convert_tf1_keras_tf1_round_trip(original_gelu, tmp_path):
    result = _convert(
        "--input_checkpoint",
        original_gelu["ckpt"],
        "--input_format",
        "tf1",
        "--bert_config_file",
        original_gelu["config"],
        "--output_dir",
        tmp_path / "keras",
        "--output_format",
        "keras",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert os.path.exists(tmp_path / "keras" / conversion.KERAS_PRETRAINER_FILE)
    result = _convert(
        "--input_checkpoint",
        tmp_path / "keras",
        "--input_format",
        "keras",
        "--output_dir",
        tmp_path / "tf1",
        "--output_format",
        "tf1",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    original = tf1_checkpoint.read_checkpoint(original_gelu["ckpt"])
    back = tf1_checkpoint.read_checkpoint(
        str(tmp_path / "tf1" / "bert_model.ckpt"), include_optimizer=True
    )
    assert sorted(back) == sorted(original)
    for name, value in original.items():
        assert back[name].dtype == value.dtype and back[name].shape == value.shape
        np.testing.assert_array_equal(back[name], value)
    assert BertConfig.from_json_file(
        str(tmp_path / "tf1" / "bert_config.json")
    ) == BertConfig.from_json_file(original_gelu["config"])


def test_convert_rejects_mismatched_config_without_writing(original_gelu, tmp_path):
    config = BertConfig.from_json_file(original_gelu["config"])
    config.hidden_size = 48
    bad = tmp_path / "bad_config.json"
    config.to_json_file(str(bad))
    result = _convert(
        "--input_checkpoint",
        original_gelu["ckpt"],
        "--bert_config_file",
        bad,
        "--output_dir",
        tmp_path / "out",
        "--output_format",
        "tf1",
    )
    assert result.returncode != 0
    assert "bert/embeddings/word_embeddings: checkpoint [99, 32] vs model [99, 48]" in result.stderr
    assert not os.path.exists(tmp_path / "out")


def test_load_logs_a_summary_and_the_original_listing_at_verbosity_1(original_gelu, caplog):
    config = BertConfig.from_json_file(original_gelu["config"])
    model, head = BertModel(config), ClassifierHead(2, config)
    with caplog.at_level("INFO", logger="absl"):
        tf1_checkpoint.load_tf1_checkpoint(
            original_gelu["ckpt"], strict=False, bert_model=model, classifier=head
        )
    total = len(tf1_checkpoint.build_variable_map(bert_model=model, classifier=head))
    assert (
        f"Initialized {total - 2} of {total} variables from {original_gelu['ckpt']}; not in the "
        "checkpoint, kept as initialised: output_weights, output_bias"
    ) in caplog.text
    assert "*INIT_FROM_CKPT*" not in caplog.text
    caplog.clear()
    # --verbosity=1 (absl level 1, Python's DEBUG) adds the original's per-variable listing.
    with caplog.at_level("DEBUG", logger="absl"):
        tf1_checkpoint.load_tf1_checkpoint(
            original_gelu["ckpt"], strict=False, bert_model=model, classifier=head
        )
    text = caplog.text
    assert "**** Trainable Variables ****" in text
    assert "name = bert/pooler/dense/kernel, shape = (32, 32), *INIT_FROM_CKPT*" in text
    assert "name = output_weights, shape = (2, 32)\n" in text + "\n"
