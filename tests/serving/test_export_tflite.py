"""export_model.py --format=tflite / --quantize=int8 and serving.lite_predictor: the TFLite
export answers as the text-in SavedModel of the same weights (the oracle: its own signature),
batches answer as one by one, tokenizer.json gives the original's ids, the model runs without
this project, and a damaged file is refused."""

import hashlib
import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SavedModels' WordPiece op)

from fileio.errors import UserError
from jobs.export.weights import Weights
from jobs.export_run import ExportRun, export_weights
from serving.lite_predictor import LitePredictor
from serving.predictor import load_predictor
from tests.helpers.paths import TESTDATA
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.tiny_config import tiny_config
from tests.serving.fresh_process import run_fresh
from training.tasks import ClassifierTask, NerTask, SquadTask

VOCAB = os.path.join(TESTDATA, "glue", "vocab.txt")
_NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
_LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 12)


def _vocab_size():
    return sum(1 for _ in open(VOCAB, encoding="utf-8"))


def _arrays(task, scale):
    """Random weights of a tiny model of `task`, by original name; heads scaled up so that
    answers have no near ties."""
    task.build_model()
    arrays = {name: v.numpy() for name, v in task.variable_map().items()}
    for name in arrays:
        if "output_weights" in name:
            arrays[name] = arrays[name] * scale
    return arrays


def _export(root, name, task, arrays, config, **settings):
    run = ExportRun(
        task=task,
        checkpoint="",
        vocab_file=VOCAB,
        do_lower_case=True,
        export_dir=str(root / name),
        **settings,
    )
    export_weights(run, config, Weights(arrays, "random weights", str(root)))
    return root / name


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Per task, the SavedModel, the float32 TFLite and the int8 TFLite export of one tiny
    model with random weights."""
    root = tmp_path_factory.mktemp("tflite_exports")
    config = tiny_config(vocab_size=_vocab_size(), max_position_embeddings=64)
    (root / "labels.txt").write_text("\n".join(_NER_LABELS) + "\n")
    tf.keras.utils.set_random_seed(3)
    tasks = {
        "classifier": (
            ClassifierTask(config, 2),
            dict(task_name="MRPC", max_seq_length=24),
        ),
        "windows": (
            ClassifierTask(config, 2),
            dict(task_name="SST-2", max_seq_length=16, long_inputs="windows", doc_stride=5),
        ),
        "ner": (
            NerTask(config, len(_NER_LABELS)),
            dict(label_file=str(root / "labels.txt"), max_seq_length=12, doc_stride=4),
        ),
        "squad": (
            SquadTask(config),
            dict(
                max_seq_length=40,
                doc_stride=10,
                max_query_length=8,
                version_2_with_negative=True,
                null_score_diff_threshold=0.5,
            ),
        ),
    }
    out = {}
    encoder = {k: v for k, v in _arrays(ClassifierTask(config, 2), 1.0).items() if "bert/" in k}
    out["encoder"] = {
        fmt: _export(root, f"encoder_{fmt}", "encoder", encoder, config, max_seq_length=24, **extra)
        for fmt, extra in (("saved_model", {}), ("tflite", dict(format="tflite")))
    }
    for name, (task, settings) in tasks.items():
        kind = "classifier" if name == "windows" else name
        arrays = _arrays(task, scale=30.0)
        out[name] = {
            fmt: _export(root, f"{name}_{fmt}", kind, arrays, config, **extra, **settings)
            for fmt, extra in (
                ("saved_model", {}),
                ("tflite", dict(format="tflite")),
                ("int8", dict(format="tflite", quantize="int8")),
            )
        }
    return out


_PAIRS = [
    {"text_a": "the cat sat on the mat", "text_b": "a dog ran"},
    {"text_a": _LONG, "text_b": "the lazy dog"},
    {"text_a": "", "text_b": ""},
    {"text_a": "unaffable running", "text_b": _LONG},
]


def _saved_model(export_dir):
    return tf.saved_model.load(str(export_dir)).signatures["serving_default"]


def _strings(values):
    return [v.decode() if isinstance(v, bytes) else v for v in values]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["classifier", "windows"])
def test_classifier_answers_as_its_saved_model(exports, name):
    instances = _PAIRS if name == "classifier" else [{"text_a": x["text_a"]} for x in _PAIRS]
    inputs = {k: tf.constant([x[k] for x in instances]) for k in instances[0]}
    expected = _saved_model(exports[name]["saved_model"])(**inputs)
    got = load_predictor(str(exports[name]["tflite"])).predict(instances)
    np.testing.assert_allclose(
        [g["probabilities"] for g in got], expected["probabilities"].numpy(), atol=2e-6
    )
    assert [g["label"] for g in got] == _strings(expected["label"].numpy().tolist())


@pytest.mark.slow
def test_encoder_pools_as_the_tf_hub_encoder(exports):
    predictor = load_predictor(str(exports["encoder"]["tflite"]))
    assert (predictor.instance_keys, predictor.optional_instance_keys) == (("text",), ("text_b",))
    instances = [{"text": "the lazy dog"}, {"text": _LONG}, {"text": "a dog", "text_b": "the fox"}]
    windows = predictor.io.windows(instances).ids
    got = predictor.predict(instances)
    hub = tf.saved_model.load(str(exports["encoder"]["saved_model"]))
    for window, answer in zip(windows, got, strict=True):
        ids = {
            "input_word_ids": [window["input_ids"]],
            "input_mask": [window["input_mask"]],
            "input_type_ids": [window["segment_ids"]],
        }
        expected = hub({k: tf.constant(v, tf.int32) for k, v in ids.items()})
        np.testing.assert_allclose(answer["pooled_output"], expected["pooled_output"][0], atol=1e-5)
    assert len(windows[1]["input_ids"]) == 24  # cut to max_seq_length, as the classifier


@pytest.mark.slow
def test_ner_tags_every_word_as_its_saved_model(exports):
    texts = ["john lives in paris", _LONG, "", "dog \u200b ran\tto  the\nmat"]
    expected = _saved_model(exports["ner"]["saved_model"])(text=tf.constant(texts))
    got = load_predictor(str(exports["ner"]["tflite"])).predict([{"text": t} for t in texts])
    for answer, words, tags, count in zip(
        got,
        expected["words"].numpy().tolist(),
        expected["tags"].numpy().tolist(),
        expected["num_words"].numpy().tolist(),
        strict=True,
    ):
        assert answer["words"] == _strings(words[:count])
        assert answer["tags"] == _strings(tags[:count])
    assert len(got[1]["tags"]) == len(_LONG.split())


@pytest.mark.slow
def test_squad_answers_as_its_saved_model(exports):
    instances = [
        {"question": "who sat", "context": "the cat sat on the mat , and the dog ran ."},
        {"question": "what jumps over", "context": _LONG},
        {"question": "", "context": ""},
        {"question": "the fox", "context": "quick  brown\tfox jumps"},
    ]
    expected = _saved_model(exports["squad"]["saved_model"])(
        question=tf.constant([x["question"] for x in instances]),
        context=tf.constant([x["context"] for x in instances]),
    )
    # At max_seq_length, as the SavedModel and the original: the same best positions.
    predictor = LitePredictor(str(exports["squad"]["tflite"]), pad_to_max_seq_length=True)
    got = predictor.predict(instances)
    for key in ("score", "no_answer_probability"):
        np.testing.assert_allclose([g[key] for g in got], expected[key].numpy(), atol=1e-4)
    # Answers compared where the null decision is no near tie (random weights may put the
    # null score minus the best span's within float rounding of the threshold).
    probability = expected["no_answer_probability"].numpy().astype(np.float64)
    clear = np.abs(np.log(probability / (1 - probability)) - 0.5) > 1e-3
    assert clear.sum() >= 3
    for key in ("answer", "start_char", "end_char"):
        want = _strings(expected[key].numpy().tolist())
        assert [g[key] for g, c in zip(got, clear, strict=True) if c] == [
            w for w, c in zip(want, clear, strict=True) if c
        ]
    # Cut to each batch's longest (the default), windows that fill max_seq_length answer alike.
    cut = load_predictor(str(exports["squad"]["tflite"])).predict(instances[1:2])
    assert cut[0]["answer"] == got[1]["answer"] and cut[0]["score"] == pytest.approx(
        got[1]["score"], abs=1e-4
    )
    for g, x in zip(got, instances, strict=True):
        if g["start_char"] >= 0:
            # The answer is the original's: the context's words joined by one space.
            span = x["context"][g["start_char"] : g["end_char"]]
            assert " ".join(span.split()) == g["answer"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["classifier", "ner", "squad"])
def test_int8_batches_answer_as_one_by_one(exports, name):
    predictor = load_predictor(str(exports[name]["int8"]))
    assert predictor.precision == "int8"
    instances = {
        "classifier": _PAIRS,
        "ner": [{"text": t} for t in ("john lives in paris", _LONG, "")],
        "squad": [{"question": "who", "context": c} for c in ("the cat sat", _LONG, "")],
    }[name]
    together = predictor.predict(instances)
    alone = [predictor.predict([x])[0] for x in instances]
    for a, b in zip(together, alone, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float | list) and key not in ("words", "tags"):
                np.testing.assert_allclose(a[key], b[key], atol=1e-5)
            else:
                assert a[key] == b[key], key


@pytest.mark.slow
def test_int8_is_smaller_and_tracks_float32(exports):
    float_dir, int8_dir = exports["classifier"]["tflite"], exports["classifier"]["int8"]
    assert json.loads((int8_dir / "serving.json").read_text())["quantize"] == "int8"
    assert (int8_dir / "model.tflite").stat().st_size < (float_dir / "model.tflite").stat().st_size
    windows = [
        {"input_ids": [2, 5 + i, 9, 3], "input_mask": [1] * 4, "segment_ids": [0, 0, 1, 1]}
        for i in range(8)
    ]
    exact = LitePredictor(str(float_dir)).run(windows)
    quantized = LitePredictor(str(int8_dir)).run(windows)
    for e, q in zip(exact, quantized, strict=True):
        cosine = (
            e["logits"] @ q["logits"] / np.linalg.norm(e["logits"]) / np.linalg.norm(q["logits"])
        )
        assert cosine > 0.99


@pytest.mark.slow
def test_tokenizer_json_gives_the_original_ids(exports, tmp_path):
    # The oracle: Google's own tokenization.py (bert-tensorflow), in a process without this
    # project, against the `tokenizers` library reading only tokenizer.json.
    texts = []
    for name in ("train.tsv", "dev.tsv"):
        path = os.path.join(TESTDATA, "glue", "MRPC", name)
        if os.path.exists(path):
            texts += [c for line in open(path, encoding="utf-8") for c in line.split("\t")[3:]]
    texts += [
        "Héllo, WORLD! [CLS] don't 北京大学 naïve café\tsup\u200b\x00 ok \ue000x",
        "x" * 199 + " " + "y" * 201,
        "",
        "Ａｂｃ ﬁ ① \u3000 e\u0301",
    ]
    body = """
import bert.tokenization as original
import tokenizers
original.FLAGS(["tokenize"])  # its tokenizer reads --preserve_unused_tokens (default off)
out = {}
for lower in (True, False):
    oracle = original.FullTokenizer(INPUTS["vocab"], do_lower_case=lower)
    ours = tokenizers.Tokenizer.from_file(INPUTS["tokenizer"][str(lower)])
    out[str(lower)] = [
        [oracle.convert_tokens_to_ids(oracle.tokenize(t)), ours.encode(t, add_special_tokens=False).ids]
        for t in INPUTS["texts"]
    ]
pair = tokenizers.Tokenizer.from_file(INPUTS["tokenizer"]["True"]).encode("a dog", "the dog")
out["pair"] = [pair.tokens, pair.type_ids]
OUTPUTS = out
"""
    from serving.exports.tokenizer_json import write_tokenizer_json

    paths = {}
    for lower in (True, False):
        paths[str(lower)] = str(tmp_path / f"tokenizer_{lower}.json")
        write_tokenizer_json(paths[str(lower)], VOCAB, lower)
    out = run_fresh(
        tmp_path, "tokenize", body, {"vocab": VOCAB, "tokenizer": paths, "texts": texts}
    )
    for lower in ("True", "False"):
        for text, (expected, got) in zip(texts, out[lower], strict=True):
            assert got == expected, (lower, text)
    assert out["pair"] == [
        ["[CLS]", "a", "dog", "[SEP]", "the", "dog", "[SEP]"],
        [0, 0, 0, 0, 1, 1, 1],
    ]
    shipped = json.loads((exports["classifier"]["int8"] / "tokenizer.json").read_text())
    assert shipped == json.loads(open(paths["True"]).read())


@pytest.mark.slow
def test_the_export_runs_without_this_project(exports, tmp_path):
    export_dir = exports["classifier"]["int8"]
    body = """
import numpy as np
import tensorflow as tf
import tokenizers
tokenizer = tokenizers.Tokenizer.from_file(INPUTS["dir"] + "/tokenizer.json")
encoding = tokenizer.encode(*INPUTS["pair"])
ids = np.array([encoding.ids], np.int32)
runner = tf.lite.Interpreter(model_path=INPUTS["dir"] + "/model.tflite").get_signature_runner()
out = runner(input_ids=ids, input_mask=np.ones_like(ids), segment_ids=np.array([encoding.type_ids], np.int32))
OUTPUTS = {"ids": encoding.ids, "logits": out["logits"][0].tolist()}
"""
    pair = ["the cat sat on the mat", "a dog ran"]
    out = run_fresh(tmp_path, "alone", body, {"dir": str(export_dir), "pair": pair})
    predictor = LitePredictor(str(export_dir))
    (windows,) = predictor.io.windows([{"text_a": pair[0], "text_b": pair[1]}]).ids
    assert out["ids"] == windows["input_ids"]
    (ours,) = predictor.run([windows])
    np.testing.assert_allclose(out["logits"], ours["logits"], atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b[: len(b) // 2], "is damaged"),
        (lambda b: b[:-100] + bytes(100), "is damaged"),
        # Another file under the name, its checksum recorded: TFLite's own check refuses it.
        (lambda b: b"not a model" * 10, "is not a TFLite model"),
    ],
)
def test_a_damaged_model_file_is_refused(exports, tmp_path, damage, message):
    source = exports["classifier"]["int8"]
    target = tmp_path / "export"
    target.mkdir()
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    model = damage((source / "model.tflite").read_bytes())
    (target / "model.tflite").write_bytes(model)
    if message == "is not a TFLite model":
        config = json.loads((target / "serving.json").read_text())
        config["model_sha256"] = hashlib.sha256(model).hexdigest()
        (target / "serving.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match=message) as err:
        load_predictor(str(target))
    assert str(target / "model.tflite") in str(err.value)


@pytest.mark.slow
def test_export_model_command_line(exports, tmp_path):
    # --quantize=int8 implies TFLite; with --format=saved_model it is refused in one sentence.
    checkpoint = exports["classifier"]["saved_model"]
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            "--task=classifier",
            "--task_name=MRPC",
            f"--checkpoint={checkpoint}",
            f"--vocab_file={VOCAB}",
            "--bert_config_file=unused.json",
            f"--export_dir={tmp_path / 'x'}",
            "--quantize=int8",
            "--format=saved_model",
        ]
    )
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode != 0 and "--quantize=int8 writes a TFLite model" in last, last
