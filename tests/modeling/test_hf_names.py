"""The one Hugging Face name table (modeling/formats/hf_names.py), read both ways."""

import numpy as np
import pytest

from modeling.formats import hf_names, task_heads


def _original_names(layers=2):
    """Every name of a BertForPreTraining-sized model in Google's layout, written out."""
    names = [f"bert/embeddings/{t}_embeddings" for t in ("word", "token_type", "position")]
    names += ["bert/embeddings/LayerNorm/gamma", "bert/embeddings/LayerNorm/beta"]
    for i in range(layers):
        scope = f"bert/encoder/layer_{i}/"
        for part in ("query", "key", "value"):
            names += [f"{scope}attention/self/{part}/kernel", f"{scope}attention/self/{part}/bias"]
        for block in ("attention/output", "intermediate", "output"):
            names += [f"{scope}{block}/dense/kernel", f"{scope}{block}/dense/bias"]
        for block in ("attention/output", "output"):
            names += [f"{scope}{block}/LayerNorm/gamma", f"{scope}{block}/LayerNorm/beta"]
    names += ["bert/pooler/dense/kernel", "bert/pooler/dense/bias"]
    names += [f"cls/predictions/transform/dense/{leaf}" for leaf in ("kernel", "bias")]
    names += [f"cls/predictions/transform/LayerNorm/{leaf}" for leaf in ("gamma", "beta")]
    names += ["cls/predictions/output_bias"]
    names += ["cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"]
    return names


def _arrays(names):
    rng = np.random.default_rng(0)
    arrays = {}
    for name in names:
        # Not square, so that a transposition shows.
        shape = (3, 5) if name.endswith(("kernel", "weights")) else (4,)
        arrays[name] = rng.normal(size=shape).astype(np.float32)
    return arrays


def test_every_name_goes_out_and_back():
    arrays = _arrays(_original_names())
    hf = hf_names.original_to_hf(arrays)
    assert len(hf) == len(arrays) == 5 + 2 * 16 + 2 + 5 + 2
    assert "bert.encoder.layer.1.attention.output.LayerNorm.weight" in hf
    assert "cls.predictions.bias" in hf and "bert.pooler.dense.weight" in hf
    # Dense kernels only are transposed: torch's [out, in].
    assert hf["bert.encoder.layer.0.intermediate.dense.weight"].shape == (5, 3)
    assert hf["cls.seq_relationship.weight"].shape == (3, 5)
    back = hf_names.hf_to_original_names(hf)
    assert sorted(back) == sorted(arrays)
    for name, value in arrays.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)


def test_the_encoder_alone_has_bare_names():
    encoder = [n for n in _original_names(1) if n.startswith("bert/")]
    hf = hf_names.original_to_hf(_arrays(encoder))
    assert "embeddings.word_embeddings.weight" in hf
    assert not any(n.startswith("bert.") for n in hf)


@pytest.mark.parametrize("head", task_heads.HEADS, ids=lambda h: h.name)
def test_a_task_head_goes_out_and_back_untransposed(head):
    encoder = [n for n in _original_names(1) if n.startswith("bert/")]
    arrays = _arrays(encoder + list(head.names))
    hf = hf_names.original_to_hf(arrays)
    assert all(n.startswith("bert.") for n in hf if n not in head.hf_names)
    np.testing.assert_array_equal(hf[head.hf_names[0]], arrays[head.names[0]])
    assert sorted(hf_names.hf_to_original_names(hf, head)) == sorted(arrays)
    with pytest.raises(ValueError, match=f"no original BERT equivalent:\n  {head.hf_names[0]}"):
        hf_names.hf_to_original_names(hf)


def test_old_layer_norm_names_buffers_and_tied_weights_are_read():
    value = np.ones(4, np.float32)
    out = hf_names.hf_to_original_names(
        {
            "bert.embeddings.LayerNorm.gamma": value,
            "encoder.layer.0.output.LayerNorm.beta": value,
            "bert.embeddings.position_ids": np.arange(4),
            "cls.predictions.decoder.weight": value,
        }
    )
    assert sorted(out) == [
        "bert/embeddings/LayerNorm/gamma",
        "bert/encoder/layer_0/output/LayerNorm/beta",
    ]


def test_unknown_names_are_refused_both_ways():
    with pytest.raises(ValueError, match="bert/encoder/layer_0/foo/kernel has no Hugging Face"):
        hf_names.original_to_hf({"bert/encoder/layer_0/foo/kernel": np.ones((2, 2))})
    with pytest.raises(ValueError, match="\n  encoder.layer.x.output.dense.weight \\[2\\]"):
        hf_names.hf_to_original_names({"encoder.layer.x.output.dense.weight": np.ones(2)})


def test_activations_both_ways():
    for ours, theirs, aliases in hf_names.ACTIVATIONS:
        assert hf_names.TO_HF_ACTIVATION[ours] == theirs
        for name in (theirs, *aliases):
            assert hf_names.FROM_HF_ACTIVATION[name] == ours
