"""export_model.py --task=encoder / pretraining: TF Hub-format SavedModels that Model Garden's
own loading code uses, with outputs equal to Google's original modeling.py."""

import json
import os
import sys

import numpy as np
import pytest

from tests.helpers.scripts import REPO, run_in_repo
from tests.serving.fresh_process import export_here, run_fresh

# Sentences and pairs for the preprocessor: plain text on which Model Garden's BertTokenizer and
# the original FullTokenizer agree.
_SENTENCES = [
    "Hello, world! This is BERT.",
    "The quick brown fox jumps over the lazy dog's back (twice).",
    "unaffable naïve café",
    " ".join(["a very long sentence"] * 20),
]
_SECONDS = ["A second segment.", "short", "x y z", " ".join(["other words"] * 20)]


def _export(config, checkpoint, vocab, export_dir, **fields):
    export_here(
        config,
        checkpoint=str(checkpoint),
        vocab_file=str(vocab),
        export_dir=str(export_dir),
        max_seq_length=128,
        **fields,
    )


def _tiny_vocab(path, size):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    path.write_text("\n".join(specials + [f"tok{i}" for i in range(size - len(specials))]) + "\n")
    return path


def _log_softmax(x):
    x = np.asarray(x, np.float64)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


_HUB_ENCODER = """
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
from official.nlp.tasks.utils import get_encoder_from_hub  # Model Garden's loader

inputs = {k: tf.constant(v, tf.int32) for k, v in INPUTS["inputs"].items()}
encoder = get_encoder_from_hub(INPUTS["encoder"])
out = encoder(inputs)
mlm = hub.KerasLayer(hub.load(INPUTS["encoder"]).mlm)
mlm_out = mlm({**inputs, "masked_lm_positions": tf.constant(INPUTS["positions"], tf.int32)})
loaded = hub.load(INPUTS["encoder"])
OUTPUTS = {
    "pooled_output": out["pooled_output"].numpy().tolist(),
    "default": out["default"].numpy().tolist(),
    "sequence_output": out["sequence_output"].numpy().tolist(),
    "encoder_outputs": [x.numpy().tolist() for x in out["encoder_outputs"]],
    "mlm_logits": mlm_out["mlm_logits"].numpy().tolist(),
    "trainable": len(encoder.trainable_weights),
    "do_lower_case": bool(loaded.do_lower_case.numpy()),
    "vocab": open(loaded.vocab_file.asset_path.numpy().decode()).read().split(),
}
"""


@pytest.mark.slow
def test_encoder_and_mlm_equal_the_original(original_gelu, tmp_path):
    ref = original_gelu["ref"]
    config = original_gelu["config"]
    vocab = _tiny_vocab(tmp_path / "vocab.txt", 99)
    encoder_dir = tmp_path / "encoder"
    _export(config, original_gelu["ckpt"], vocab, encoder_dir, task="encoder")
    inputs = {
        "input_word_ids": ref["input_ids"].tolist(),
        "input_mask": ref["input_mask"].tolist(),
        "input_type_ids": ref["segment_ids"].tolist(),
    }
    got = run_fresh(
        tmp_path,
        "hub_encoder",
        _HUB_ENCODER,
        {
            "encoder": str(encoder_dir),
            "inputs": inputs,
            "positions": ref["masked_lm_positions"].tolist(),
        },
    )
    atol = dict(atol=1e-5, rtol=0)
    np.testing.assert_allclose(got["sequence_output"], ref["sequence_output"], **atol)
    np.testing.assert_allclose(got["pooled_output"], ref["pooled_output"], **atol)
    np.testing.assert_allclose(got["default"], ref["pooled_output"], **atol)
    np.testing.assert_allclose(got["encoder_outputs"], ref["all_encoder_layers"], **atol)
    logits = np.asarray(got["mlm_logits"])
    assert logits.shape == (*ref["masked_lm_positions"].shape, 99)
    np.testing.assert_allclose(
        _log_softmax(logits).reshape(-1, 99), ref["masked_lm_log_probs"], **atol
    )
    # Every encoder weight (embeddings, layers, pooler) is trainable through hub.KerasLayer.
    layers = json.loads(open(config).read())["num_hidden_layers"]
    assert got["trainable"] == 5 + 16 * layers + 2
    assert got["do_lower_case"] and got["vocab"] == vocab.read_text().split()


_PRETRAINING = """
import tensorflow as tf
model = tf.saved_model.load(INPUTS["export"])
out = model.signatures["serving_default"](
    **{k: tf.constant(v, tf.int32) for k, v in INPUTS["inputs"].items()}
)
OUTPUTS = {k: v.numpy().tolist() for k, v in out.items()}
"""


@pytest.mark.slow
def test_pretraining_export_equals_the_original(original_gelu, tmp_path):
    ref = original_gelu["ref"]
    vocab = _tiny_vocab(tmp_path / "vocab.txt", 99)
    export_dir = tmp_path / "pretraining"
    _export(original_gelu["config"], original_gelu["ckpt"], vocab, export_dir, task="pretraining")
    names = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
    got = run_fresh(
        tmp_path,
        "pretraining",
        _PRETRAINING,
        {"export": str(export_dir), "inputs": {k: ref[k].tolist() for k in names}},
    )
    atol = dict(atol=1e-5, rtol=0)
    mlm = _log_softmax(got["masked_lm_logits"]).reshape(-1, 99)
    np.testing.assert_allclose(mlm, ref["masked_lm_log_probs"], **atol)
    nsp = _log_softmax(got["next_sentence_logits"])
    np.testing.assert_allclose(nsp, ref["next_sentence_log_probs"], **atol)


_PREPROCESS = """
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text  # noqa: F401
from official.nlp.modeling import layers  # Model Garden's own BERT preprocessing

first, second = tf.constant(INPUTS["first"]), tf.constant(INPUTS["second"])
preprocessor = hub.load(INPUTS["preprocessor"])
single = hub.KerasLayer(preprocessor)(first)
tokenize = hub.KerasLayer(preprocessor.tokenize)
pack = hub.KerasLayer(preprocessor.bert_pack_inputs, arguments=dict(seq_length=20))
pair = pack([tokenize(first), tokenize(second)])
special = {k: int(v) for k, v in preprocessor.tokenize.get_special_tokens_dict().items()}

garden_tokenizer = layers.BertTokenizer(vocab_file=INPUTS["vocab"], lower_case=True)
garden_pack = layers.BertPackInputs(
    seq_length=20, special_tokens_dict=garden_tokenizer.get_special_tokens_dict()
)
garden_pack_128 = layers.BertPackInputs(
    seq_length=128, special_tokens_dict=garden_tokenizer.get_special_tokens_dict()
)
garden_pair = garden_pack([garden_tokenizer(first), garden_tokenizer(second)])
garden_single = garden_pack_128([garden_tokenizer(first)])
as_lists = lambda d: {k: v.numpy().tolist() for k, v in d.items()}
OUTPUTS = {
    "single": as_lists(single),
    "pair": as_lists(pair),
    "garden_single": as_lists(garden_single),
    "garden_pair": as_lists(garden_pair),
    "tokens": tokenize(first).to_list(),
    "garden_tokens": garden_tokenizer(first).to_list(),
    "special": special,
    "garden_special": {k: int(v) for k, v in garden_tokenizer.get_special_tokens_dict().items()},
}
"""


@pytest.mark.slow
def test_preprocessor_equals_model_garden_and_the_original(minilm_tf1, tmp_path):
    sys.path.insert(0, REPO)
    from data.tokenization.full_tokenizer import FullTokenizer
    from data.tokenization.packing import pack_tokens

    vocab = str(minilm_tf1 / "vocab.txt")
    _export(
        minilm_tf1 / "bert_config.json",
        minilm_tf1 / "bert_model.ckpt",
        vocab,
        tmp_path / "encoder",
        task="encoder",
        preprocessor_export_dir=str(tmp_path / "preprocess"),
    )
    got = run_fresh(
        tmp_path,
        "preprocess",
        _PREPROCESS,
        {
            "preprocessor": str(tmp_path / "preprocess"),
            "vocab": vocab,
            "first": _SENTENCES,
            "second": _SECONDS,
        },
    )
    for ours, garden in (("single", "garden_single"), ("pair", "garden_pair")):
        assert got[ours] == got[garden], ours
    assert got["tokens"] == got["garden_tokens"]
    assert {k: got["special"][k] for k in got["garden_special"]} == got["garden_special"]
    # The original's tokenization and packing give the same ids.
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    for index, (a, b) in enumerate(zip(_SENTENCES, _SECONDS, strict=True)):
        packed = pack_tokens(
            tokenizer.tokenize(a), tokenizer.tokenize(b), 20, tokenizer.convert_tokens_to_ids
        )
        assert got["pair"]["input_word_ids"][index] == packed.input_ids
        assert got["pair"]["input_type_ids"][index] == packed.segment_ids
        single = pack_tokens(tokenizer.tokenize(a), None, 128, tokenizer.convert_tokens_to_ids)
        assert got["single"]["input_word_ids"][index] == single.input_ids


def test_refuses_a_vocab_larger_than_the_model(original_gelu, tmp_path):
    vocab = _tiny_vocab(tmp_path / "vocab.txt", 120)
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            "--task=encoder",
            f"--checkpoint={original_gelu['ckpt']}",
            f"--bert_config_file={original_gelu['config']}",
            f"--vocab_file={vocab}",
            f"--export_dir={tmp_path / 'encoder'}",
        ]
    )
    assert result.returncode != 0
    assert f"{vocab} has 120 tokens but the model's vocab_size is 99" in result.stderr
    assert not (tmp_path / "encoder").exists()


def test_encoder_export_refuses_a_reduced_precision(original_gelu, tmp_path):
    """A TF Hub encoder is float32: its users fine-tune it in the precision they choose."""
    vocab = _tiny_vocab(tmp_path / "vocab.txt", 99)
    with pytest.raises(ValueError, match="--task=encoder exports float32 only"):
        export_here(
            original_gelu["config"],
            task="encoder",
            checkpoint=original_gelu["ckpt"],
            vocab_file=vocab,
            max_seq_length=16,
            export_dir=tmp_path / "encoder",
            precision="mixed_bfloat16",
        )
    assert not (tmp_path / "encoder").exists()
