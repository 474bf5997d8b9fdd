"""convert_checkpoint.py's other formats, each proven with the other project's own code: Model
Garden's TF1 converter and TF Hub exporter (tf2, tfhub in), keras-hub's BertBackbone and its
Transformers loader (keras_hub in/out, hf out), the real MiniLM safetensors file (hf round trip).
"""

import json
import os
import subprocess
import sys

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from data.tokenization.full_tokenizer import FullTokenizer
from jobs.export.tfhub import export_encoder_weights
from modeling import tf1_checkpoint
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.formats import conversion, hf_import
from modeling.task_models import BertPretrainer
from tests.helpers.minilm import minilm_dir
from tests.helpers.scripts import ENV, REPO, run_in_repo
from tests.helpers.tiny_config import tiny_config
from tests.oracles import run_oracle

_MLM = "cls/predictions/"
_NSP = "cls/seq_relationship/"


def _tiny_vocab(path, size):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    path.write_text("\n".join(specials + [f"tok{i}" for i in range(size - len(specials))]) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def original(original_gelu, tmp_path_factory):
    """The original code's tiny checkpoint (both heads), its arrays, config and a vocab."""
    directory = tmp_path_factory.mktemp("original")
    return {
        "ckpt": original_gelu["ckpt"],
        "config_file": original_gelu["config"],
        "config": BertConfig.from_json_file(original_gelu["config"]),
        "arrays": tf1_checkpoint.read_checkpoint(original_gelu["ckpt"]),
        "vocab": _tiny_vocab(directory / "vocab.txt", 99),
        "ref": original_gelu["ref"],
    }


@pytest.fixture(scope="module")
def model_garden(original, tmp_path_factory):
    """Model Garden's own layouts of the original checkpoint (see the oracle's docstring)."""
    out = tmp_path_factory.mktemp("model_garden")
    run_oracle(
        "model_garden_formats",
        [
            "--checkpoint",
            original["ckpt"],
            "--bert_config_file",
            original["config_file"],
            "--vocab_file",
            original["vocab"],
            "--out",
            out,
        ],
    )
    return out


def _assert_same(arrays, expected, groups=("bert/", _MLM, _NSP)):
    wanted = {n: v for n, v in expected.items() if n.startswith(groups)}
    assert sorted(arrays) == sorted(wanted)
    for name, value in wanted.items():
        assert arrays[name].dtype == np.float32 and arrays[name].shape == value.shape, name
        np.testing.assert_array_equal(arrays[name], value, err_msg=name)


def _encoder_outputs(config, arrays, ref):
    model = BertModel(config)
    tf1_checkpoint.assign_arrays(
        tf1_checkpoint.build_variable_map(bert_model=model),
        {n: v for n, v in arrays.items() if n.startswith("bert/")},
        log=False,
    )
    out = model({k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
    return out["sequence_output"].numpy(), out["pooled_output"].numpy()


# --- tf2 and tfhub in: Model Garden's converter and exporter ----------------------------------


@pytest.mark.slow
def test_model_garden_tf2_checkpoints_come_back_bit_identical(original, model_garden):
    for kind, groups in (
        ("encoder", ("bert/",)),
        ("legacy", ("bert/",)),  # tf.train.Checkpoint(model=...)
        ("pretrainer", ("bert/", _MLM)),  # Model Garden's pretrainer holds no NSP head
    ):
        config, arrays, _ = conversion.read_weights(
            str(model_garden / kind), "tf2", original["config_file"]
        )
        _assert_same(arrays, original["arrays"], groups)
        assert config == original["config"]


def test_model_garden_converter_output_path_is_read_as_given(original, model_garden, tmp_path):
    # The converter was told output_path=.../encoder/ckpt and wrote ckpt-1.* and `checkpoint`.
    given = model_garden / "encoder" / "ckpt"
    assert not os.path.exists(str(given) + ".index")
    result = run_in_repo(
        [
            sys.executable,
            "convert_checkpoint.py",
            f"--input_checkpoint={given}",
            "--input_format=tf2",
            f"--bert_config_file={original['config_file']}",
            f"--output_dir={tmp_path / 'tf1'}",
            "--output_format=tf1",
        ],
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Reading checkpoint {given}-1 (for {given})" in result.stderr
    arrays = tf1_checkpoint.read_checkpoint(str(tmp_path / "tf1" / "bert_model.ckpt"))
    _assert_same(arrays, original["arrays"], ("bert/",))


def test_model_garden_tfhub_encoder_comes_back_bit_identical(original, model_garden):
    config, arrays, vocab = conversion.read_weights(
        str(model_garden / "hub"), "tfhub", original["config_file"]
    )
    _assert_same(arrays, original["arrays"], ("bert/", _MLM))
    assert open(vocab).read() == open(original["vocab"]).read()


def test_model_garden_classifier_and_foreign_saved_models_are_refused(original, model_garden):
    with pytest.raises(ValueError, match=r"classifier\.|BertClassifier") as err:
        conversion.read_weights(str(model_garden / "classifier"), "tf2", original["config_file"])
    assert str(model_garden / "classifier") in str(err.value)
    # Model Garden's SavedModel without --bert_config_file: it carries no config.
    with pytest.raises(ValueError, match="--bert_config_file is required"):
        conversion.read_weights(str(model_garden / "hub"), "tfhub")


def test_saved_model_without_the_encoder_is_refused(tmp_path):
    module = tf.Module()
    module.table = tf.Variable(tf.zeros([3, 2]))
    tf.saved_model.save(module, str(tmp_path / "other"))
    with pytest.raises(ValueError, match="not a TF Hub text encoder"):
        conversion.read_weights(str(tmp_path / "other"), "tfhub")
    with pytest.raises(ValueError, match="holds no SavedModel"):
        conversion.read_weights(str(tmp_path), "tfhub")


def test_tf2_with_a_wrong_config_lists_every_problem(original, model_garden, tmp_path):
    settings = json.load(open(original["config_file"]))
    bad = tmp_path / "bert_config.json"
    bad.write_text(json.dumps({**settings, "num_hidden_layers": 4, "type_vocab_size": 2}))
    with pytest.raises(ValueError) as err:
        conversion.read_weights(str(model_garden / "encoder"), "tf2", str(bad))
    message = str(err.value)
    assert "bert/embeddings/token_type_embeddings: checkpoint [3, 32] vs model [2, 32]" in message
    assert "missing in checkpoint: bert/encoder/layer_3/output/dense/kernel [37, 32]" in message


# --- tfhub out: the export_model.py encoder, read back ----------------------------------------


@pytest.mark.slow
def test_tfhub_out_and_back_is_bit_identical(original, tmp_path):
    export = str(tmp_path / "hub")
    export_encoder_weights(original["config"], original["arrays"], original["vocab"], True, export)
    assert os.path.exists(os.path.join(export, conversion.SAVED_MODEL_CONFIG))
    config, arrays, vocab = conversion.read_weights(export, "tfhub")
    assert config == original["config"]
    _assert_same(arrays, original["arrays"], ("bert/", _MLM))
    assert open(vocab).read() == open(original["vocab"]).read()
    with pytest.raises(FileExistsError, match="--overwrite"):
        export_encoder_weights(
            original["config"], original["arrays"], original["vocab"], True, export
        )


def test_the_conversion_job_loads_the_tf_hub_export_only():
    """convert_checkpoint.py's job imports the TF Hub export it writes, not every export of
    export_model.py (the task SavedModels, TFLite)."""
    code = (
        "import json, sys, jobs.convert_run; "
        "print(json.dumps([m for m in sys.modules if m.startswith(('jobs.', 'serving.'))]))"
    )
    # A fresh interpreter: the tests' warm runner has every job imported already.
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=ENV, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert "jobs.export.tfhub" in loaded and "serving.exports.tfhub" in loaded
    assert not [m for m in loaded if m in ("jobs.export_run", "serving.exports.tflite")], loaded
    assert not [m for m in loaded if m.endswith((".classifier", ".ner", ".squad"))], loaded


# --- hf out: keras-hub's Transformers loader and the real MiniLM file -------------------------


def test_hf_out_is_read_by_keras_hub_with_equal_outputs(original, tmp_path):
    # keras-hub's Transformers loader assumes two segment types, the original_gelu model has
    # three: a random model of the same sizes with two.
    config = BertConfig(**{**original["config"].to_dict(), "type_vocab_size": 2})
    keras.utils.set_random_seed(5)
    model = BertPretrainer(config)
    names = tf1_checkpoint.build_variable_map(bert_model=model.bert, pretraining_heads=model.cls)
    arrays = tf1_checkpoint.variables_to_arrays(names)
    out = str(tmp_path / "hf")
    conversion.write_weights(out, "hf", config, arrays, original["vocab"])
    settings = json.load(open(os.path.join(out, "config.json")))
    assert settings["architectures"] == ["BertForPreTraining"]
    assert settings["hidden_act"] == "gelu_new"  # HF's name for the original's tanh GELU
    backbone = keras_hub.models.BertBackbone.from_preset(out)
    ref = original["ref"]
    segments = np.minimum(ref["segment_ids"], 1)
    theirs = backbone(
        {"token_ids": ref["input_ids"], "segment_ids": segments, "padding_mask": ref["input_mask"]}
    )
    ours = model.bert(
        {"input_ids": ref["input_ids"], "input_mask": ref["input_mask"], "segment_ids": segments}
    )
    np.testing.assert_allclose(theirs["sequence_output"], ours["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(theirs["pooled_output"], ours["pooled_output"], atol=1e-5)
    # And back: the same tensors, bit for bit.
    _, back, _ = conversion.read_weights(out, "hf")
    _assert_same(back, arrays)


def _log_softmax(x):
    x = np.asarray(x, np.float64)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.slow
def test_hf_out_gives_the_original_outputs_in_transformers(original, tmp_path):
    """transformers' own TFBertModel / TFBertForPreTraining load the folder with no missing or
    unused weight and reproduce the original code's encoder, masked-LM and NSP outputs."""
    out = tmp_path / "hf"
    conversion.write_weights(
        str(out), "hf", original["config"], original["arrays"], original["vocab"]
    )
    ref = original["ref"]
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **{k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
    run_oracle(
        "transformers_bert",
        ["--model_dir", out, "--inputs", inputs, "--out", tmp_path / "theirs.npz"],
    )
    theirs = np.load(tmp_path / "theirs.npz")
    assert theirs["missing"].size == 0 and theirs["unexpected"].size == 0
    np.testing.assert_allclose(theirs["sequence_output"], ref["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(theirs["pooled_output"], ref["pooled_output"], atol=1e-5)
    positions = ref["masked_lm_positions"]
    logits = np.take_along_axis(theirs["prediction_logits"], positions[:, :, None], axis=1)
    np.testing.assert_allclose(
        _log_softmax(logits.reshape(-1, logits.shape[-1])), ref["masked_lm_log_probs"], atol=1e-5
    )
    np.testing.assert_allclose(
        _log_softmax(theirs["seq_relationship_logits"]), ref["next_sentence_log_probs"], atol=1e-5
    )


# Words whose ids differ with the casing: capitals, an accent the uncased model strips, a CJK
# character split off and a word WordPiece cuts.
_CASED_WORDS = ["The", "the", "Café", "cafe", "café", "Running", "run", "##ning", "##s", "中", "."]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_hf_out_tokenizer_gives_full_tokenizer_ids_in_transformers(
    original, tmp_path, do_lower_case
):
    """transformers' tokenizers (fast, as AutoTokenizer picks, and slow) loaded from the folder
    give FullTokenizer's ids with the model's casing: without tokenizer_config.json transformers
    lower-cases, a cased model's text silently."""
    import transformers

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = specials + _CASED_WORDS
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(words + [f"tok{i}" for i in range(99 - len(words))]) + "\n")
    out = tmp_path / "hf"
    conversion.write_weights(
        str(out),
        "hf",
        original["config"],
        original["arrays"],
        str(vocab),
        do_lower_case=do_lower_case,
    )
    assert sorted(os.listdir(out)) == [
        "config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    ours = FullTokenizer(str(vocab), do_lower_case=do_lower_case)
    first, second = "The Café, Runnings 中文!", "the café runs."

    def ids(text):
        return ours.convert_tokens_to_ids(ours.tokenize(text))

    cls_id, sep_id = ours.vocab["[CLS]"], ours.vocab["[SEP]"]
    expected = [cls_id, *ids(first), sep_id, *ids(second), sep_id]
    fast = transformers.AutoTokenizer.from_pretrained(str(out))
    slow = transformers.BertTokenizer.from_pretrained(str(out))
    assert isinstance(fast, transformers.BertTokenizerFast)
    for theirs in (fast, slow):
        assert theirs(first, second)["input_ids"] == expected, type(theirs).__name__
        assert theirs.model_max_length == original["config"].max_position_embeddings
        assert len(theirs) == 99  # every special token is a vocab.txt token, none added
    # The casing shows in the ids: "The" and "Café" are tokens of the cased model only.
    assert (ours.vocab["The"] in expected) is not do_lower_case
    assert (ours.vocab["Café"] in expected) is not do_lower_case


def test_minilm_hf_tf1_hf_is_bit_identical(tmp_path):
    source = str(minilm_dir())
    config, arrays, vocab = conversion.read_weights(source, "hf")
    conversion.write_weights(str(tmp_path / "tf1"), "tf1", config, arrays, vocab)
    config, arrays, vocab = conversion.read_weights(str(tmp_path / "tf1"), "tf1")
    conversion.write_weights(str(tmp_path / "hf"), "hf", config, arrays, vocab)
    before = hf_import.read_safetensors(os.path.join(source, "model.safetensors"))
    after = hf_import.read_safetensors(str(tmp_path / "hf" / "model.safetensors"))
    # position_ids is a buffer (arange), not a weight; transformers no longer saves it.
    assert sorted(after) == sorted(n for n in before if n != "embeddings.position_ids")
    for name, value in after.items():
        assert value.dtype == before[name].dtype and value.shape == before[name].shape
        np.testing.assert_array_equal(value, before[name], err_msg=name)
    settings = json.load(open(tmp_path / "hf" / "config.json"))
    original_settings = json.load(open(os.path.join(source, "config.json")))
    for key in ("hidden_act", "hidden_size", "num_attention_heads", "vocab_size"):
        assert settings[key] == original_settings[key]
    assert settings["architectures"] == ["BertModel"]


# --- keras_hub in and out ---------------------------------------------------------------------


def test_keras_hub_out_gives_equal_outputs_and_comes_back(original, tmp_path):
    out = str(tmp_path / "preset")
    conversion.write_weights(
        out, "keras_hub", original["config"], original["arrays"], original["vocab"]
    )
    ref = original["ref"]
    masked_lm = keras_hub.models.BertMaskedLM.from_preset(out)
    theirs = masked_lm.backbone(
        {
            "token_ids": ref["input_ids"],
            "segment_ids": ref["segment_ids"],
            "padding_mask": ref["input_mask"],
        }
    )
    np.testing.assert_allclose(theirs["sequence_output"], ref["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(theirs["pooled_output"], ref["pooled_output"], atol=1e-5)
    assert masked_lm.preprocessor.tokenizer.vocabulary_size() == 99
    # Back: encoder and masked-LM head bit for bit (keras-hub has no next-sentence head).
    config, arrays, vocab = conversion.read_weights(out, "keras_hub")
    _assert_same(arrays, original["arrays"], ("bert/", _MLM))
    assert config == original["config"]
    assert open(vocab).read() == open(original["vocab"]).read()


def test_keras_hub_preset_of_minilm_reads_like_the_hf_folder(tmp_path):
    """keras-hub's own Transformers converter makes the preset; reading it gives the tensors
    this project reads from the HF folder directly."""
    backbone = keras_hub.models.BertBackbone.from_preset(str(minilm_dir()))
    backbone.save_to_preset(str(tmp_path / "preset"))
    config, arrays, _ = conversion.read_weights(str(tmp_path / "preset"), "keras_hub")
    hf_config, hf_arrays, _ = conversion.read_weights(str(minilm_dir()), "hf")
    _assert_same(arrays, hf_arrays, ("bert/",))
    assert config.num_hidden_layers == hf_config.num_hidden_layers == 6
    # keras-hub computes the tanh GELU, MiniLM the exact one: writing it there is refused.
    with pytest.raises(ValueError, match="tanh GELU only"):
        conversion.write_weights(str(tmp_path / "out"), "keras_hub", hf_config, hf_arrays)
    assert not os.path.exists(tmp_path / "out")


def test_keras_hub_and_hf_inputs_of_other_models_are_refused(tmp_path):
    roberta = keras_hub.models.RobertaBackbone(
        vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16
    )
    roberta.save_to_preset(str(tmp_path / "roberta"))
    with pytest.raises(ValueError, match="RobertaBackbone.*not a BERT model"):
        conversion.read_weights(str(tmp_path / "roberta"), "keras_hub")
    hf = tmp_path / "hf_roberta"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "roberta", "vocab_size": 50}))
    (hf / "model.safetensors").write_bytes(b"\0" * 8)
    with pytest.raises(ValueError, match="model_type is 'roberta'"):
        conversion.read_weights(str(hf), "hf")
    with pytest.raises(ValueError, match="--input_format=hf"):
        conversion.read_weights(str(hf), "keras_hub")


# --- the command line ----------------------------------------------------------------------------


def test_command_line_tf2_to_tf1_and_an_existing_output_dir(original, model_garden, tmp_path):
    def convert(*args):
        return run_in_repo(
            [sys.executable, "convert_checkpoint.py", "--input_format=tf2", "--output_format=tf1"]
            + [str(a) for a in args]
        )

    out = tmp_path / "tf1"
    source = ["--input_checkpoint", model_garden / "pretrainer"]
    config = ["--bert_config_file", original["config_file"]]
    result = convert(*source, *config, "--output_dir", out)
    assert result.returncode == 0, result.stderr[-3000:]
    back = tf1_checkpoint.read_checkpoint(str(out / "bert_model.ckpt"))
    _assert_same(back, original["arrays"], ("bert/", _MLM))
    assert BertConfig.from_json_file(str(out / "bert_config.json")) == original["config"]
    # The directory exists now: refused before any work, untouched.
    stamp = os.path.getmtime(out / "bert_model.ckpt.index")
    result = convert(*source, *config, "--output_dir", out)
    assert result.returncode != 0 and "pass --overwrite" in result.stderr
    assert os.path.getmtime(out / "bert_model.ckpt.index") == stamp
    # --overwrite replaces it whole, with no temporary directory left beside it.
    conversion.write_weights(
        str(out), "hf", original["config"], original["arrays"], original["vocab"], overwrite=True
    )
    assert sorted(os.listdir(out)) == [
        "config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    assert sorted(os.listdir(tmp_path)) == ["tf1"]


def test_partial_heads_are_listed():
    config = tiny_config()
    model = BertPretrainer(config)
    names = tf1_checkpoint.build_variable_map(bert_model=model.bert, pretraining_heads=model.cls)
    arrays = tf1_checkpoint.variables_to_arrays(names)
    del arrays["cls/predictions/output_bias"]
    arrays["output_weights"] = np.zeros([2, 8], np.float32)
    with pytest.raises(ValueError) as err:
        conversion.validate(config, arrays, "weights.ckpt")
    assert "missing in checkpoint: cls/predictions/output_bias [99]" in str(err.value)
    # A half of a task head is listed in the same error.
    assert "shape mismatch: output_weights: [2, 8], want [2, 32]" in str(err.value)
    assert "missing in checkpoint: output_bias [2]" in str(err.value)
    keras.backend.clear_session()
