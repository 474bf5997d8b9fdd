"""convert_checkpoint.py on fine-tuned models: run_classifier's, run_ner's and run_squad's heads
to Hugging Face's BertForSequenceClassification / TokenClassification / QuestionAnswering and
back, proven with transformers' own TensorFlow classes (tests.oracles.transformers_task_heads).
"""

import json
import os
import re
import sys

import numpy as np
import pytest

from jobs.convert_run import ConvertRun, convert
from modeling import tf1_checkpoint
from modeling.formats import task_heads
from modeling.task_models import BertClassifier, BertSpanModel, BertTokenClassifier
from tests.helpers.paths import REPO
from tests.helpers.scripts import PEER_ENV, run_in_repo
from tests.helpers.tiny_config import tiny_config, write_tiny_config
from tests.oracles import run_oracle

_MNLI_LABELS = ["contradiction", "entailment", "neutral"]
_NER_LABELS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]


def _model(kind, config):
    """(our task model, its variable map) with a head large enough to give logits of O(1)."""
    if kind == "classifier":
        model = BertClassifier(config, num_labels=3)
        head = {"classifier": model.classifier}
    elif kind == "ner":
        model = BertTokenClassifier(config, num_labels=len(_NER_LABELS))
        head = {"token_classifier": model.classifier}
    else:
        model = BertSpanModel(config)
        head = {"span": model.span}
    names = tf1_checkpoint.build_variable_map(bert_model=model.bert, **head)
    rng = np.random.default_rng(len(kind))
    for name, var in names.items():
        if "output_" in name or name.startswith("bert/pooler/"):
            var.assign(rng.normal(0, 0.5, var.shape).astype(np.float32))
    return model, names


def _inputs():
    rng = np.random.default_rng(3)
    ids = rng.integers(5, 99, size=(3, 16)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 10:] = 0
    mask[2, 5:] = 0
    segments = np.zeros_like(ids)
    segments[:, 8:] = 1
    return {"input_ids": ids * mask, "input_mask": mask, "segment_ids": segments * mask}


def _our_logits(kind, model, inputs):
    out = model(inputs)
    if kind == "squad":
        return {"start_logits": out[0].numpy(), "end_logits": out[1].numpy()}
    return {"logits": out.numpy()}


@pytest.fixture(scope="module", params=["classifier", "ner", "squad"])
def fine_tuned(request, tmp_path_factory):
    """A fine-tuning run's output_dir as the runners leave it: model.ckpt-N with optimizer
    slots, flags.txt naming the config, vocab and task, and run_ner's labels.txt."""
    kind = request.param
    root = tmp_path_factory.mktemp(f"fine_tuned_{kind}")
    run = root / "run"
    run.mkdir()
    write_tiny_config(root / "bert_config.json")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = specials + [f"tok{i}" for i in range(99 - len(specials))]
    (root / "vocab.txt").write_text("".join(f"{word}\n" for word in words))
    model, names = _model(kind, tiny_config())
    arrays = tf1_checkpoint.variables_to_arrays(names)
    slots = {f"{n}/adam_m": np.zeros_like(v) for n, v in arrays.items()}
    tf1_checkpoint.save_tf1_checkpoint(
        {**arrays, **slots, "global_step": np.int64(7)}, str(run / "model.ckpt-7")
    )
    flags = [
        f"--bert_config_file={root / 'bert_config.json'}",
        f"--vocab_file={root / 'vocab.txt'}",
    ]
    if kind == "classifier":
        # A cased run: the converted folder's tokenizer must keep the case.
        flags += ["--task_name=MNLI", "--nodo_lower_case"]
    if kind == "ner":
        (run / "labels.txt").write_text("".join(f"{tag}\n" for tag in _NER_LABELS))
    (run / "flags.txt").write_text("\n".join(flags) + "\n")
    inputs = _inputs()
    np.savez(root / "inputs.npz", **inputs)
    return {
        "kind": kind,
        "root": root,
        "run": run,
        "arrays": arrays,
        "logits": _our_logits(kind, model, inputs),
    }


def _transformers(hf_dir, fine_tuned):
    out = fine_tuned["root"] / f"transformers_{os.path.basename(hf_dir)}.npz"
    run_oracle(
        "transformers_task_heads",
        ["--model_dir", hf_dir, "--inputs", fine_tuned["root"] / "inputs.npz", "--out", out],
    )
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


@pytest.mark.slow
def test_a_fine_tuned_run_gives_its_logits_and_labels_in_transformers(fine_tuned):
    """The command line on a run's output_dir (config and vocab from its flags.txt): the HF
    class of the head loads every tensor and gives our model's logits, with the run's labels."""
    hf_dir = fine_tuned["root"] / "hf"
    result = run_in_repo(
        [
            sys.executable,
            "convert_checkpoint.py",
            f"--input_checkpoint={fine_tuned['run']}",
            f"--output_dir={hf_dir}",
            "--output_format=hf",
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(os.listdir(hf_dir)) == [
        "config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    # The casing the run recorded, without --do_lower_case on the command line.
    tokenizer_settings = json.loads((hf_dir / "tokenizer_config.json").read_text())
    assert tokenizer_settings["do_lower_case"] is (fine_tuned["kind"] != "classifier")
    hf = _transformers(hf_dir, fine_tuned)
    assert list(hf["missing"]) == [] and list(hf["unexpected"]) == []
    for name, ours in fine_tuned["logits"].items():
        np.testing.assert_allclose(hf[name], ours, atol=1e-5, rtol=1e-5, err_msg=name)
        assert np.abs(ours).max() > 0.1  # logits far from zero: the head really is compared
    expected = {"classifier": _MNLI_LABELS, "ner": _NER_LABELS, "squad": ["LABEL_0", "LABEL_1"]}
    assert list(hf["id2label"]) == expected[fine_tuned["kind"]]


def test_hf_to_tf1_and_back_keeps_every_tensor_and_the_labels(fine_tuned, tmp_path):
    """hf -> tf1 gives the run's arrays (the pooler, which HF's token and span classes lack, as
    zeros) and run_ner's labels.txt; tf1 -> hf again gives the same safetensors bytes."""
    kind = fine_tuned["kind"]
    first = tmp_path / "hf"
    convert(ConvertRun(str(fine_tuned["run"]), str(first), output_format="hf"))
    back = tmp_path / "tf1"
    convert(ConvertRun(str(first), str(back), input_format="hf", output_format="tf1"))
    arrays = tf1_checkpoint.read_checkpoint(str(back / "bert_model.ckpt"))
    expected = dict(fine_tuned["arrays"])
    if kind != "classifier":
        for name in task_heads.POOLER_NAMES:
            expected[name] = np.zeros_like(expected[name])
    assert sorted(arrays) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(arrays[name], value, err_msg=name)
    if kind == "ner":
        assert (back / "labels.txt").read_text().split() == _NER_LABELS
    else:
        assert not (back / "labels.txt").exists()
    again = tmp_path / "hf_again"
    convert(
        ConvertRun(
            str(back),
            str(again),
            output_format="hf",
            task_name="MNLI" if kind == "classifier" else None,
        )
    )
    assert (again / "model.safetensors").read_bytes() == (first / "model.safetensors").read_bytes()
    assert json.loads((again / "config.json").read_text()) == json.loads(
        (first / "config.json").read_text()
    )


@pytest.mark.parametrize("fine_tuned", ["ner"], indirect=True)
def test_encoder_formats_leave_the_head_out_with_a_warning(fine_tuned, tmp_path, caplog):
    written = convert(
        ConvertRun(str(fine_tuned["run"]), str(tmp_path / "k"), output_format="keras")
    )
    assert any(path.endswith("bert_model.weights.h5") for path in written)
    assert "The ner head (cls/ner/output_weights, cls/ner/output_bias) is left out" in caplog.text
    wrong = tmp_path / "labels.txt"
    wrong.write_text("O\nB-PER\nI-PER\n")
    run = ConvertRun(str(fine_tuned["run"]), str(tmp_path / "h"), output_format="hf")
    run.label_file = str(wrong)
    with pytest.raises(ValueError, match="names 3 classes .* the checkpoint's ner head has 5"):
        convert(run)
    assert not (tmp_path / "h").exists()


def _documented_load():
    """The Python block of docs/checkpoints.md that loads a converted classifier."""
    with open(os.path.join(REPO, "docs", "checkpoints.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    (block,) = [b for b in blocks if "TFAutoModelForSequenceClassification" in b]
    return block


@pytest.mark.slow
@pytest.mark.parametrize("fine_tuned", ["classifier"], indirect=True)
def test_the_documented_load_of_a_converted_classifier_runs(fine_tuned, tmp_path):
    """docs/checkpoints.md's Python, as written, on the folder of its command: transformers'
    TensorFlow classes read the safetensors file without PyTorch, which is never imported."""
    hf_dir = tmp_path / "mrpc_hf"
    convert(ConvertRun(str(fine_tuned["run"]), str(hf_dir), output_format="hf"))
    code = _documented_load()
    assert '"/tmp/mrpc_hf"' in code
    code = code.replace("/tmp/mrpc_hf", str(hf_dir))
    # transformers imports PyTorch wherever it is installed unless USE_TORCH says no: so that
    # the test means "works without PyTorch" in any environment, it is switched off, and
    # asserted never imported.
    code += "\nimport sys\nassert 'torch' not in sys.modules, 'PyTorch was imported'\n"
    # transformers is no requirement of the project: the code runs with the test libraries
    # (and transformers' import probes for pandas, which user_install's finder refuses).
    result = run_in_repo([sys.executable, "-c", code], env={**PEER_ENV, "USE_TORCH": "0"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-1] in _MNLI_LABELS, result.stdout


def test_heads_that_cannot_be_told_apart_or_do_not_fit_are_listed():
    two = {"output_weights": np.zeros((3, 32)), "cls/squad/output_weights": np.zeros((2, 32))}
    assert task_heads.problems(two, 32) == (
        None,
        [
            "  more than one task head: classifier (output_weights), squad "
            "(cls/squad/output_weights); a fine-tuned model has one"
        ],
    )
    half = {"cls/ner/output_weights": np.zeros((3, 32))}
    assert task_heads.problems(half, 32) == (
        task_heads.NER,
        ["  missing in checkpoint: cls/ner/output_bias [3]"],
    )
    wrong = {"cls/squad/output_weights": np.zeros((3, 32)), "cls/squad/output_bias": np.zeros(3)}
    assert task_heads.problems(wrong, 32)[1] == [
        "  shape mismatch: cls/squad/output_weights: [3, 32], want [2, 32]",
        "  shape mismatch: cls/squad/output_bias: [3], want [2]",
    ]
    with pytest.raises(ValueError, match='set "architectures" to the class'):
        task_heads.hf_head_of({"architectures": ["BertModel"]}, {"classifier.weight": None})


@pytest.mark.parametrize("fine_tuned", ["classifier"], indirect=True)
def test_an_hf_classifier_of_unknown_class_is_refused_in_one_sentence(fine_tuned, tmp_path):
    hf_dir = tmp_path / "hf"
    convert(ConvertRun(str(fine_tuned["run"]), str(hf_dir), output_format="hf"))
    settings = json.loads((hf_dir / "config.json").read_text())
    settings["architectures"] = ["BertModel"]
    (hf_dir / "config.json").write_text(json.dumps(settings))
    result = run_in_repo(
        [
            sys.executable,
            "convert_checkpoint.py",
            f"--input_checkpoint={hf_dir}",
            "--input_format=hf",
            f"--output_dir={tmp_path / 'tf1'}",
            "--output_format=tf1",
        ]
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "do not say whether classifier.weight is a sequence classifier" in last, last
    assert not (tmp_path / "tf1").exists()
