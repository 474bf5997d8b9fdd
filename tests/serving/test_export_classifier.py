"""export_model.py --task=classifier: the exported text-in model, loaded where only tensorflow
and tensorflow_text exist, answers as run_classifier.py's test_results.tsv."""

import csv
import os
import shutil
import sys

import numpy as np
import pytest

from tests.helpers.glue_tasks import write_mrpc
from tests.helpers.scripts import REPO, run_in_repo
from tests.serving.fresh_process import export_here, run_fresh, saved_model_cli_signatures

# Test pairs beyond the generated ones: case, accents, punctuation, CJK, and pairs far longer
# than --max_seq_length=24, so truncation decides the answer.
_HARD_PAIRS = [
    ("Café Zürich's CEO — “quoted” text…", "The CEO of Café Zürich spoke."),
    ("ÉCOLE NORMALE, Paris (1794)!", "école normale in paris"),
    ("東京 is in Japan.", "Tokyo is a city"),
    (" ".join(["the man went to the market yesterday"] * 6), "yesterday the man walked to it"),
    ("a b", " ".join(["yesterday a woman walked to the river"] * 5)),
]


def _export(minilm_tf1, checkpoint, export_dir, *extra, max_seq_length=24):
    length = [f"--max_seq_length={max_seq_length}"] if max_seq_length else []
    return run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            f"--checkpoint={checkpoint}",
            f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
            f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
            *length,
            f"--export_dir={export_dir}",
            *extra,
        ],
        timeout=600,
    )


@pytest.fixture(scope="module")
def mrpc_run(minilm_tf1, tmp_path_factory):
    """A short MRPC fine-tuning of MiniLM with test predictions, and its export."""
    root = tmp_path_factory.mktemp("mrpc_export")
    data, out = root / "data", root / "out"
    write_mrpc(data, num_train=32, num_dev=8, num_test=20)
    with open(data / "test.tsv", "a") as f:
        for i, (a, b) in enumerate(_HARD_PAIRS, start=20):
            f.write(f"{i}\t{i}\t{i + 1}\t{a}\t{b}\n")
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_classifier.py"),
            "--task_name=MRPC",
            f"--data_dir={data}",
            f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
            f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
            f"--init_checkpoint={minilm_tf1 / 'bert_model.ckpt'}",
            "--max_seq_length=24",
            "--train_batch_size=16",
            "--predict_batch_size=8",
            "--num_train_epochs=1",
            "--learning_rate=1e-4",
            f"--output_dir={out}",
            "--do_train",
            "--do_predict",
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    export_dir = root / "export"
    result = _export(minilm_tf1, out, export_dir, "--task=classifier", "--task_name=MRPC")
    assert result.returncode == 0, result.stderr[-3000:]
    return {"data": data, "out": out, "export": export_dir, "root": root}


def _test_pairs(data):
    sys.path.insert(0, REPO)
    from data.glue.processors import get_processor

    examples = get_processor("mrpc").get_test_examples(str(data))
    return [e.text_a for e in examples], [e.text_b for e in examples]


def _test_results(out):
    with open(out / "test_results.tsv") as f:
        return np.array(list(csv.reader(f, delimiter="\t")), dtype=np.float64)


_SERVE_TEXT = """
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece op)
model = tf.saved_model.load(INPUTS["export"])
serve = model.signatures["serving_default"]
out = serve(text_a=tf.constant(INPUTS["a"]), text_b=tf.constant(INPUTS["b"]))
records = list(tf.data.TFRecordDataset(INPUTS["records"]).as_numpy_iterator())
by_example = model.signatures["serve_examples"](examples=tf.constant(records))
OUTPUTS = {
    "probabilities": out["probabilities"].numpy().tolist(),
    "label": [x.decode() for x in out["label"].numpy()],
    "example_probabilities": by_example["probabilities"].numpy().tolist(),
    "vocab_asset": model.vocab_file.asset_path.numpy().decode(),
    "do_lower_case": bool(model.do_lower_case.numpy()),
}
"""


@pytest.mark.slow
def test_text_in_answers_as_test_results(mrpc_run, tmp_path):
    text_a, text_b = _test_pairs(mrpc_run["data"])
    expected = _test_results(mrpc_run["out"])
    assert expected.shape == (len(_HARD_PAIRS) + 20, 2)
    got = run_fresh(
        tmp_path,
        "serve_text",
        _SERVE_TEXT,
        {
            "export": str(mrpc_run["export"]),
            "a": text_a,
            "b": text_b,
            "records": str(mrpc_run["out"] / "predict.tf_record"),
        },
    )
    np.testing.assert_allclose(got["probabilities"], expected, atol=1e-5, rtol=0)
    assert got["label"] == [str(i) for i in np.argmax(expected, axis=1)]
    # The same records run_classifier predicted from, through serve_examples.
    np.testing.assert_allclose(got["example_probabilities"], expected, atol=1e-5, rtol=0)
    assert got["vocab_asset"].endswith("assets/vocab.txt") and got["do_lower_case"]


def _mrpc_export_probabilities(mrpc_run, minilm_tf1, tmp_path, **settings):
    """Exports the MRPC run with `settings`; its probabilities for the test pairs, served in a
    fresh process."""
    export_here(
        minilm_tf1 / "bert_config.json",
        task="classifier",
        task_name="MRPC",
        checkpoint=mrpc_run["out"],
        vocab_file=minilm_tf1 / "vocab.txt",
        max_seq_length=24,
        export_dir=tmp_path / "export",
        **settings,
    )
    text_a, text_b = _test_pairs(mrpc_run["data"])
    served = run_fresh(
        tmp_path,
        "serve_mrpc",
        _SERVE_ANY,
        {"export": str(tmp_path / "export"), "texts": {"text_a": text_a, "text_b": text_b}},
    )
    return np.array(served["probabilities"])


@pytest.mark.slow
def test_full_length_export_answers_the_same(mrpc_run, minilm_tf1, tmp_path):
    """--pad_to_max_seq_length (static shapes) against run_classifier's test_results.tsv."""
    served = _mrpc_export_probabilities(mrpc_run, minilm_tf1, tmp_path, pad_to_max_seq_length=True)
    np.testing.assert_allclose(served, _test_results(mrpc_run["out"]), atol=1e-5, rtol=0)


@pytest.mark.slow
def test_bfloat16_prediction_and_export_track_float32(mrpc_run, minilm_tf1, tmp_path):
    """--precision=mixed_bfloat16 for run_classifier's prediction and for the export: the
    float32 run's labels (a flip only where float32 itself is within 0.05 of a tie) and
    probabilities within bfloat16's rounding (6e-4 apart here)."""
    import glob

    float32 = _test_results(mrpc_run["out"])
    (checkpoint,) = glob.glob(str(mrpc_run["out"] / "model.ckpt-*.index"))
    out = tmp_path / "bf16"
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_classifier.py"),
            "--task_name=MRPC",
            f"--data_dir={mrpc_run['data']}",
            f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
            f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
            f"--init_checkpoint={checkpoint.removesuffix('.index')}",
            "--max_seq_length=24",
            "--predict_batch_size=8",
            f"--output_dir={out}",
            "--do_predict",
            "--precision=mixed_bfloat16",
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    runner = _test_results(out)
    exported = _mrpc_export_probabilities(
        mrpc_run, minilm_tf1, tmp_path, precision="mixed_bfloat16"
    )
    tie = np.abs(float32[:, 1] - 0.5) < 0.05
    for probabilities in (runner, exported):
        assert np.abs(probabilities - float32).max() <= 0.01
        assert 0 < np.abs(probabilities - float32).max()  # it did run in bfloat16
        flipped = np.argmax(probabilities, 1) != np.argmax(float32, 1)
        assert not (flipped & ~tie).any()
    np.testing.assert_allclose(exported, runner, atol=1e-3, rtol=0)


@pytest.mark.slow
def test_saved_model_cli_lists_the_signatures(mrpc_run):
    signatures = saved_model_cli_signatures(mrpc_run["export"])
    assert signatures["serving_default"] == (
        {"text_a": "DT_STRING", "text_b": "DT_STRING"},
        {"label": "DT_STRING", "probabilities": "DT_FLOAT"},
    )
    assert signatures["serve_examples"] == (
        {"examples": "DT_STRING"},
        {"label": "DT_STRING", "probabilities": "DT_FLOAT"},
    )


@pytest.mark.slow
def test_an_existing_export_dir_is_replaced_only_with_overwrite(mrpc_run, minilm_tf1, tmp_path):
    export = tmp_path / "export"
    shutil.copytree(mrpc_run["export"], export)
    (export / "stale.txt").write_text("from an earlier export")
    before = sorted(os.listdir(export))
    args = ("--task=classifier", "--task_name=MRPC")
    result = _export(minilm_tf1, mrpc_run["out"], export, *args)
    assert result.returncode != 0
    assert "already exists; pass --overwrite" in result.stderr
    assert sorted(os.listdir(export)) == before
    # Without --max_seq_length: the run's own (24), from the flags.txt it saved.
    result = _export(minilm_tf1, mrpc_run["out"], export, *args, "--overwrite", max_seq_length=None)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"--max_seq_length=24 from {mrpc_run['out'] / 'flags.txt'}" in result.stderr
    # A new export in its place: the old folder's files are gone, not merged.
    assert sorted(os.listdir(export)) == sorted(os.listdir(mrpc_run["export"]))
    assert sorted(os.listdir(tmp_path)) == ["export"]  # no temporary folder left beside it


def test_a_window_past_the_position_table_is_refused_first(minilm_tf1, tmp_path):
    """--max_seq_length above max_position_embeddings: the original's sentence with the flag
    and its fix, before TensorFlow loads or anything is written."""
    export = tmp_path / "export"
    checkpoint = minilm_tf1 / "bert_model.ckpt"
    args = ("--task=classifier", "--task_name=MRPC")
    result = _export(minilm_tf1, checkpoint, export, *args, max_seq_length=1024)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "export_model.py: error: Cannot use sequence length 1024 because the BERT model was only "
        "trained up to sequence length 512: pass --max_seq_length=512 or less "
        "(max_position_embeddings in --bert_config_file)."
    )
    assert "Reading checkpoint" not in result.stderr and not export.exists()


@pytest.mark.parametrize(
    "extra,message,last_words",
    [
        # A pre-trained checkpoint has no classifier head.
        (["--task_name=MRPC", "use_pretrained"], "missing in checkpoint: output_weights", None),
        # MNLI has 3 labels, the MRPC model 2: the sentence blames --task_name, not the config,
        # and names the task of the run's flags.txt.
        (
            ["--task_name=MNLI"],
            "shape mismatch: output_weights: checkpoint [2, 384] vs model [3, 384]",
            [
                "The checkpoint's classifier head has 2 outputs but --task_name=MNLI has 3 classes",
                "pass --task_name=MRPC (the task its flags.txt names)",
            ],
        ),
        # Neither a GLUE task nor a run_classifier output_dir (problem.json) says the head.
        (
            ["use_pretrained"],
            "--task=classifier needs the task the model was fine-tuned on",
            None,
        ),
    ],
)
def test_refuses_a_checkpoint_of_another_task(
    mrpc_run, minilm_tf1, tmp_path, extra, message, last_words
):
    checkpoint = str(mrpc_run["out"])
    task_name = extra[0].split("=")[1] if extra and "=" in extra[0] else None
    if "use_pretrained" in extra:
        checkpoint = str(minilm_tf1 / "bert_model.ckpt")
    export_dir = tmp_path / "export"
    with pytest.raises(ValueError) as raised:
        export_here(
            minilm_tf1 / "bert_config.json",
            task="classifier",
            task_name=task_name,
            checkpoint=checkpoint,
            vocab_file=minilm_tf1 / "vocab.txt",
            max_seq_length=24,
            export_dir=export_dir,
        )
    assert message in str(raised.value)
    assert not export_dir.exists() and os.listdir(tmp_path) == []
    if last_words:
        # The line the user reads last (run_command prints the message as it is).
        last = str(raised.value).splitlines()[-1]
        for words in last_words:
            assert words in last, last
        assert "--bert_config_file" not in last and last.endswith(".")


def test_a_label_list_of_another_run_is_named(tmp_path):
    """A run of one's own data: the head's outputs against the labels.txt the export reads."""
    sys.path.insert(0, REPO)
    from data.label_file import write_label_file
    from data.own_data.labels import write_problem_file
    from tests.helpers.tiny_config import tiny_config, write_tiny_config
    from tests.helpers.tiny_exports import VOCAB, write_checkpoint
    from training.tasks import ClassifierTask

    config = tiny_config(vocab_size=len(VOCAB))
    checkpoint = tmp_path / "run"
    write_checkpoint(ClassifierTask(config, 2, False), checkpoint, np.random.default_rng(0))
    write_problem_file(str(checkpoint / "problem.json"), "single_label", False)
    write_label_file(str(checkpoint / "labels.txt"), ["ok", "spam"])
    other = tmp_path / "other_labels.txt"
    write_label_file(str(other), ["billing", "bug", "other"])
    write_tiny_config(tmp_path / "bert_config.json", vocab_size=len(VOCAB))
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    with pytest.raises(ValueError) as raised:
        export_here(
            tmp_path / "bert_config.json",
            task="classifier",
            checkpoint=checkpoint,
            label_file=str(other),
            vocab_file=tmp_path / "vocab.txt",
            max_seq_length=16,
            export_dir=tmp_path / "export",
        )
    assert str(raised.value).splitlines()[-1] == (
        f"The checkpoint's classifier head has 2 outputs but {other} gives 3 classes, so they "
        "are not the labels the model was fine-tuned on: pass --label_file with the labels.txt "
        "of the run that wrote the checkpoint."
    )
    assert not (tmp_path / "export").exists()


_SERVE_ANY = """
import tensorflow as tf
import tensorflow_text  # noqa: F401
serve = tf.saved_model.load(INPUTS["export"]).signatures["serving_default"]
out = serve(**{k: tf.constant(v) for k, v in INPUTS["texts"].items()})
OUTPUTS = {k: [x.decode() if isinstance(x, bytes) else x for x in v.numpy().tolist()]
           for k, v in out.items()}
"""


@pytest.mark.slow
@pytest.mark.parametrize("task_name", ["STS-B", "CoLA"])
def test_single_sentence_and_regression_tasks(minilm_tf1, tmp_path, task_name):
    """A random tiny model per task: the export's outputs equal the model on the features
    run_classifier builds in Python (FullTokenizer, convert_single_example)."""
    sys.path.insert(0, REPO)
    import tensorflow as tf

    from data.glue.features import convert_examples_to_features
    from data.glue.processor_base import InputExample
    from data.glue.processors import get_processor
    from data.tokenization.full_tokenizer import FullTokenizer
    from modeling import tf1_checkpoint
    from tests.helpers.tiny_config import tiny_config, write_tiny_config
    from training.tasks import ClassifierTask

    processor = get_processor(task_name)
    labels = processor.get_labels()
    task = ClassifierTask(tiny_config(vocab_size=30522), len(labels), processor.is_regression)
    task.build_model()
    ckpt = tmp_path / "ckpt" / "model.ckpt"
    ckpt.parent.mkdir()
    tf1_checkpoint.save_tf1_checkpoint(
        tf1_checkpoint.variables_to_arrays(task.variable_map()), str(ckpt)
    )
    write_tiny_config(tmp_path / "bert_config.json", vocab_size=30522)
    vocab = str(minilm_tf1 / "vocab.txt")
    export_here(
        tmp_path / "bert_config.json",
        task="classifier",
        task_name=task_name,
        checkpoint=ckpt,
        vocab_file=vocab,
        max_seq_length=16,
        export_dir=tmp_path / "export",
    )
    pairs = [*(_HARD_PAIRS), ("the movie was great .", "a great film")]
    texts = {"text_a": [a for a, _ in pairs]}
    if processor.has_text_b:
        texts["text_b"] = [b for _, b in pairs]
    got = run_fresh(
        tmp_path, "serve", _SERVE_ANY, {"export": str(tmp_path / "export"), "texts": texts}
    )

    examples = [
        InputExample(
            str(i),
            a,
            b if processor.has_text_b else None,
            "0" if processor.is_regression else labels[0],
        )
        for i, (a, b) in enumerate(pairs)
    ]
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    features = convert_examples_to_features(
        examples, labels, 16, tokenizer, processor.is_regression
    )
    inputs = {
        k: tf.constant([getattr(f, k) for f in features], tf.int32)
        for k in ("input_ids", "input_mask", "segment_ids")
    }
    logits = task.model(inputs, training=False).numpy()
    if processor.is_regression:
        assert set(got) == {"score"}
        np.testing.assert_allclose(got["score"], logits[:, 0], atol=1e-5, rtol=0)
    else:
        assert set(got) == {"probabilities", "label"}
        expected = tf.nn.softmax(logits).numpy()
        np.testing.assert_allclose(got["probabilities"], expected, atol=1e-5, rtol=0)
        assert got["label"] == [labels[i] for i in np.argmax(logits, axis=1)]


def test_a_batch_cut_to_its_longest_input_answers_as_the_full_length_batch(tmp_path):
    """The export runs the model on the batch cut to its longest real sequence: the logits
    equal the model's on the full max_seq_length batch (nothing real is cut, padding changes
    nothing), without building a SavedModel."""
    sys.path.insert(0, REPO)
    import tensorflow as tf

    from modeling.task_models import BertClassifier
    from serving.exports.classifier import ClassifierExport
    from tests.helpers.tiny_config import tiny_config
    from tests.helpers.tiny_exports import VOCAB

    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    model = BertClassifier(tiny_config(vocab_size=len(VOCAB)), num_labels=2)
    export = ClassifierExport(model, str(tmp_path / "vocab.txt"), True, 16, ["0", "1"], False, True)
    rng = np.random.default_rng(5)
    lengths = np.array([11, 6, 9])
    mask = (np.arange(16)[None, :] < lengths[:, None]).astype(np.int32)
    features = {
        "input_ids": tf.constant(rng.integers(5, len(VOCAB), (3, 16)) * mask, tf.int32),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.constant((np.arange(16)[None, :] >= 4) * mask, tf.int32),
    }
    np.testing.assert_allclose(
        export._logits(features).numpy(), model(features, training=False).numpy(), atol=1e-5
    )
