"""Real weights: all-MiniLM-L6-v2 (HF format) against outputs recorded with transformers."""

import os
import shutil

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy

from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.formats import conversion
from modeling.formats.hf_import import config_from_hf, hf_to_original_names, read_safetensors
from tests.helpers.minilm import minilm_dir
from tests.helpers.paths import TESTDATA

REFERENCE = os.path.join(TESTDATA, "minilm_l6_reference.npz")
# Measured: 2.9e-6 largest difference on real tokens (float32 sums in another order).
TOL = 3e-5


@pytest.fixture(scope="module")
def reference():
    return dict(np.load(REFERENCE))


def _check_against_reference(model, ref):
    out = model({k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
    real = ref["input_mask"].astype(bool)
    diffs = [np.abs(out["embedding_output"].numpy() - ref["embedding_output"])[real].max()]
    for mine, theirs in zip(out["all_encoder_layers"], ref["all_encoder_layers"], strict=True):
        diffs.append(np.abs(mine.numpy() - theirs)[real].max())
    diffs.append(np.abs(out["sequence_output"].numpy() - ref["sequence_output"])[real].max())
    diffs.append(np.abs(out["pooled_output"].numpy() - ref["pooled_output"]).max())
    assert max(diffs) <= TOL, diffs
    return max(diffs)


def test_safetensors_reader_matches_the_reference_library():
    path = os.path.join(minilm_dir(), "model.safetensors")
    ours, theirs = read_safetensors(path), safetensors.numpy.load_file(path)
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name].dtype == theirs[name].dtype
        np.testing.assert_array_equal(ours[name], theirs[name])


def test_hf_import_matches_transformers(reference):
    config, arrays, vocab = conversion.read_weights(minilm_dir(), "hf")
    assert config.hidden_act == "gelu_exact" and config.type_vocab_size == 2
    assert vocab and os.path.basename(vocab) == "vocab.txt"
    model, _ = conversion.build_keras_model(config, arrays)
    _check_against_reference(model, reference)


def test_tanh_gelu_does_not_match(reference):
    """The reference tells the two GELU forms apart, so the match above means something."""
    config, arrays, _ = conversion.read_weights(minilm_dir(), "hf")
    config.hidden_act = "gelu"
    model, _ = conversion.build_keras_model(config, arrays)
    with pytest.raises(AssertionError):
        _check_against_reference(model, reference)


def test_tf1_round_trip_matches_transformers(reference, tmp_path):
    config, arrays, vocab = conversion.read_weights(minilm_dir(), "hf")
    conversion.write_weights(str(tmp_path), "tf1", config, arrays, vocab)
    assert (tmp_path / "vocab.txt").read_bytes() == open(vocab, "rb").read()
    config2, arrays2, _ = conversion.read_weights(str(tmp_path / "bert_model.ckpt"), "tf1")
    assert config2 == config
    model = BertModel(config2)
    tf1_checkpoint.load_tf1_checkpoint(str(tmp_path), bert_model=model)
    _check_against_reference(model, reference)


def test_hf_activation_and_name_mapping():
    base = {"vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2}
    assert config_from_hf({**base, "hidden_act": "gelu"}).hidden_act == "gelu_exact"
    assert config_from_hf({**base, "hidden_act": "gelu_new"}).hidden_act == "gelu"
    assert config_from_hf({**base, "hidden_act": "gelu_pytorch_tanh"}).hidden_act == "gelu"
    with pytest.raises(ValueError, match="hidden_act 'swish'"):
        config_from_hf({**base, "hidden_act": "swish"})
    with pytest.raises(ValueError, match="layer_norm_eps is 1e-05"):
        config_from_hf({**base, "layer_norm_eps": 1e-5})
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = hf_to_original_names(
        {
            "bert.encoder.layer.3.attention.output.dense.weight": w,
            "cls.seq_relationship.weight": w,
            "bert.embeddings.position_ids": np.arange(3),
        }
    )
    np.testing.assert_array_equal(out["bert/encoder/layer_3/attention/output/dense/kernel"], w.T)
    np.testing.assert_array_equal(out["cls/seq_relationship/output_weights"], w)
    assert len(out) == 2
    with pytest.raises(ValueError, match="no original BERT equivalent:\n  encoder.layer.0.foo"):
        hf_to_original_names({"encoder.layer.0.foo": w})


def test_hf_missing_files_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="config.json not found"):
        conversion.read_weights(str(tmp_path), "hf")
    (tmp_path / "model.safetensors").write_bytes(b"\x05")
    with pytest.raises(ValueError, match="not a safetensors file"):
        read_safetensors(str(tmp_path / "model.safetensors"))


@pytest.fixture(scope="module")
def float32_outputs(reference):
    return _model_outputs(minilm_dir(), reference)


def _model_outputs(model_dir, ref):
    config, arrays, _ = conversion.read_weights(model_dir, "hf")
    model, _ = conversion.build_keras_model(config, arrays)
    out = model({k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
    return [t.numpy() for t in (*out["all_encoder_layers"], out["pooled_output"])]


@pytest.mark.parametrize(
    # Measured max |difference| from the float32 file's outputs (values up to ~6): bfloat16
    # 0.032, float16 0.0038; the tolerances are ten times that.
    "dtype,tol",
    [(ml_dtypes.bfloat16, 0.3), (np.float16, 0.04)],
    ids=["bfloat16", "float16"],
)
def test_half_precision_safetensors_import_like_float32(
    reference, float32_outputs, tmp_path, dtype, tol
):
    """A model saved in bfloat16 or float16 by the safetensors package itself (bfloat16 through
    ml_dtypes, numpy having no such type) reads as float32 and computes what the float32 model
    does, within the rounding of the narrower type."""
    source = minilm_dir()
    weights = safetensors.numpy.load_file(os.path.join(source, "model.safetensors"))
    narrow = {k: v.astype(dtype) if v.dtype == np.float32 else v for k, v in weights.items()}
    path = tmp_path / "model.safetensors"
    safetensors.numpy.save_file(narrow, str(path))
    shutil.copy(os.path.join(source, "config.json"), tmp_path)
    theirs = safetensors.numpy.load_file(str(path))
    assert {str(v.dtype) for v in theirs.values()} == {np.dtype(dtype).name, "int64"}
    ours = read_safetensors(str(path))
    for name, value in theirs.items():
        # Every value exactly: ml_dtypes' own widening is the reference.
        want = value.astype(np.float32) if value.dtype == dtype else value
        np.testing.assert_array_equal(ours[name].astype(want.dtype), want, err_msg=name)
    real = reference["input_mask"].astype(bool)
    wide = float32_outputs
    half = _model_outputs(str(tmp_path), reference)
    diffs = [np.abs(a - b)[real].max() for a, b in zip(half[:-1], wide[:-1], strict=True)]
    diffs.append(np.abs(half[-1] - wide[-1]).max())
    assert 0 < max(diffs) <= tol, diffs
