"""run_classifier.py on the user's own files, end to end with real weights (all-MiniLM-L6-v2):
a multi-label CSV task whose labels must come out the same through the run's predictions, the
SavedModel, the int8 TFLite export, serve.py and the Hugging Face conversion (transformers' own
pipeline); a single-label JSON Lines task with class weights and its report files; a processor
written for the original, from its own file; bad files refused before anything is written."""

import csv
import http.client
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.helpers.own_data_tasks import write_animals_csv, write_sentiment_jsonl
from tests.helpers.scripts import ENV, PEER_ENV, REPO, run_in_repo


def _model_flags(minilm_tf1):
    return [
        f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
        f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
        "--max_seq_length=24",
    ]


def _classifier(minilm_tf1, out, *flags):
    cmd = [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        *_model_flags(minilm_tf1),
        f"--init_checkpoint={minilm_tf1 / 'bert_model.ckpt'}",
        "--train_batch_size=16",
        "--eval_batch_size=32",
        "--predict_batch_size=32",
        f"--output_dir={out}",
        *flags,
    ]
    return run_in_repo(cmd, timeout=900)


def _tsv(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t"))


def _results(out):
    lines = (out / "eval_results.txt").read_text().splitlines()
    return {k: float(v) for k, v in (line.split(" = ") for line in lines)}


@pytest.fixture(scope="module")
def animals(minilm_tf1, tmp_path_factory):
    """The multi-label run: `comment` / `tags` CSV files, 3 epochs, train + eval + predict."""
    root = tmp_path_factory.mktemp("animals")
    sets = write_animals_csv(root / "data")
    out = root / "out"
    result = _classifier(
        minilm_tf1,
        out,
        f"--train_file={root / 'data' / 'train.csv'}",
        f"--dev_file={root / 'data' / 'dev.csv'}",
        f"--test_file={root / 'data' / 'test.csv'}",
        "--text_a_column=comment",
        "--label_column=tags",
        "--problem_type=multi_label",
        "--learning_rate=1e-4",
        "--num_train_epochs=3",
        "--do_train",
        "--do_eval",
        "--do_predict",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {"root": root, "out": out, "sets": sets}


@pytest.mark.slow
def test_multi_label_run_learns_and_writes_its_labels(animals):
    out = animals["out"]
    results = _results(out)
    assert results["eval_micro_f1"] >= 0.9, results
    assert {"eval_macro_f1", "eval_subset_accuracy", "eval_threshold", "eval_loss"} <= set(results)
    assert (out / "labels.txt").read_text() == "bird\ncat\ndog\n"
    assert json.loads((out / "problem.json").read_text()) == {
        "problem_type": "multi_label",
        "has_text_b": False,
    }
    thresholds = [row for row in _tsv(out / "thresholds.txt")]
    assert [row[0] for row in thresholds] == ["bird", "cat", "dog"]
    report = _tsv(out / "eval_report.tsv")
    assert report[0] == ["label", "precision", "recall", "f1", "support"]
    assert [row[0] for row in report[1:4]] == ["bird", "cat", "dog"]
    # test_results.tsv stays the original's: one probability per label, no header.
    probabilities = np.array(_tsv(out / "test_results.tsv"), dtype=np.float64)
    assert probabilities.shape == (30, 3)
    predictions = _tsv(out / "test_predictions.tsv")
    assert predictions[0] == ["index", "labels", "bird", "cat", "dog"]
    cut = np.array([float(t) for _, t in thresholds])
    for row, p in zip(predictions[1:], probabilities, strict=True):
        chosen = [name for name, q, t in zip(("bird", "cat", "dog"), p, cut, strict=True) if q >= t]
        assert row[1] == ",".join(chosen)
    truth = [sorted(labels) for _, labels in animals["sets"]["test"]]
    found = [sorted(row[1].split(",")) if row[1] else [] for row in predictions[1:]]
    assert sum(f == t for f, t in zip(found, truth, strict=True)) >= 27, (found, truth)


def _predicted(out):
    return [row[1].split(",") if row[1] else [] for row in _tsv(out / "test_predictions.tsv")[1:]]


@pytest.mark.slow
def test_predict_only_run_reads_labels_problem_and_thresholds(minilm_tf1, animals, tmp_path):
    out = tmp_path / "again"
    checkpoint = sorted(animals["out"].glob("model.ckpt-*.index"))[-1]
    result = _classifier(
        minilm_tf1,
        out,
        f"--test_file={animals['root'] / 'data' / 'test.csv'}",
        "--text_a_column=comment",
        "--do_predict",
        f"--init_checkpoint={str(checkpoint)[: -len('.index')]}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert _predicted(out) == _predicted(animals["out"])
    assert (out / "labels.txt").read_text() == "bird\ncat\ndog\n"


def _export(minilm_tf1, checkpoint, export_dir, *flags):
    cmd = [
        sys.executable,
        os.path.join(REPO, "export_model.py"),
        "--task=classifier",
        f"--checkpoint={checkpoint}",
        *_model_flags(minilm_tf1),
        f"--export_dir={export_dir}",
        *flags,
    ]
    result = run_in_repo(cmd, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return export_dir


def _served(export_dir, instances, tmp_path):
    log = tmp_path / "serve.log"
    process = subprocess.Popen(
        [sys.executable, os.path.join(REPO, "serve.py"), f"--model={export_dir}", "--port=0"],
        cwd=REPO,
        env=ENV,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 180
        while " at http://" not in log.read_text():
            assert process.poll() is None and time.time() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)
        address = log.read_text().split(" at http://", 1)[1].split("/v1/predict", 1)[0]
        connection = http.client.HTTPConnection(address, timeout=60)
        connection.request("POST", "/v1/predict", json.dumps({"instances": instances}))
        response = connection.getresponse()
        assert response.status == 200
        return json.loads(response.read())["predictions"]
    finally:
        process.kill()
        process.wait()


@pytest.mark.slow
def test_multi_label_labels_identical_through_export_int8_serving_and_hf(
    minilm_tf1, animals, tmp_path
):
    from serving.predictor import load_predictor

    texts = [text for text, _ in animals["sets"]["test"]]
    instances = [{"text_a": t} for t in texts]
    expected = _predicted(animals["out"])
    saved = _export(minilm_tf1, animals["out"], tmp_path / "saved")
    int8 = _export(minilm_tf1, animals["out"], tmp_path / "int8", "--quantize=int8")
    for export_dir in (saved, int8):
        answers = load_predictor(str(export_dir)).predict(instances)
        assert [a["labels"] for a in answers] == expected, export_dir
    assert [a["labels"] for a in _served(saved, instances, tmp_path)] == expected
    hf = tmp_path / "hf"
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "convert_checkpoint.py"),
            f"--input_checkpoint={animals['out']}",
            "--output_format=hf",
            f"--output_dir={hf}",
        ],
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.loads((hf / "config.json").read_text())
    assert config["problem_type"] == "multi_label_classification"
    thresholds = {row[0]: float(row[1]) for row in _tsv(animals["out"] / "thresholds.txt")}
    # transformers' own pipeline, in its own process (its TF classes on this folder).
    script = (
        "import json, sys\n"
        "from transformers import BertTokenizerFast, TFBertForSequenceClassification, pipeline\n"
        f"folder = {str(hf)!r}\n"
        "model = TFBertForSequenceClassification.from_pretrained(folder)\n"
        "tokenizer = BertTokenizerFast(folder + '/vocab.txt', do_lower_case=True)\n"
        "classify = pipeline('text-classification', model=model, tokenizer=tokenizer, "
        "framework='tf', top_k=None)\n"
        "print(json.dumps(classify(json.loads(sys.argv[1]))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, json.dumps(texts)],
        capture_output=True,
        text=True,
        env=PEER_ENV,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    scored = json.loads(result.stdout.strip().splitlines()[-1])
    hf_labels = [
        sorted(
            (s["label"] for s in row if s["score"] >= thresholds[s["label"]]),
            key=["bird", "cat", "dog"].index,
        )
        for row in scored
    ]
    assert hf_labels == expected


@pytest.mark.slow
def test_single_label_jsonl_class_weights_and_report(minilm_tf1, tmp_path):
    sets = write_sentiment_jsonl(tmp_path / "data")
    out = tmp_path / "out"
    result = _classifier(
        minilm_tf1,
        out,
        f"--data_dir={tmp_path / 'data'}",
        "--text_a_column=review",
        "--label_column=rating",
        "--class_weights=balanced",
        "--learning_rate=1e-4",
        "--num_train_epochs=2",
        "--do_train",
        "--do_eval",
        "--do_predict",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # Balanced weights from the training labels, logged: examples / (2 x count of the class).
    counts = {label: sum(y == label for _, y in sets["train"]) for label in ("neg", "pos")}
    for label, count in counts.items():
        assert f"'{label}': {round(200 / (2 * count), 4)}" in result.stderr
    results = _results(out)
    assert results["eval_accuracy"] >= 0.9 and results["eval_macro_f1"] >= 0.9
    matrix = _tsv(out / "confusion_matrix.tsv")
    assert matrix[0] == ["true/predicted", "neg", "pos"]
    counts = np.array([[int(c) for c in row[1:]] for row in matrix[1:]])
    assert counts.sum() == 60
    assert np.trace(counts) / counts.sum() == pytest.approx(results["eval_accuracy"])
    report = {row[0]: row for row in _tsv(out / "eval_report.tsv")[1:]}
    precision_pos = counts[1, 1] / counts[:, 1].sum()
    assert float(report["pos"][1]) == pytest.approx(precision_pos, abs=1e-4)
    assert (out / "confusion_matrix.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    predictions = _tsv(out / "test_predictions.tsv")
    assert predictions[0] == ["index", "label", "neg", "pos"]
    assert sum(row[1] == y for row, (_, y) in zip(predictions[1:], sets["test"], strict=True)) >= 18
    # No GLUE leaderboard file for a task of one's own.
    assert not list(out.glob("test.tsv"))


PROCESSOR = '''
import os

import run_classifier
import tokenization


class AnimalProcessor(run_classifier.DataProcessor):
    """Sentences in `label<TAB>text` files, as many forks of the original read them."""

    def get_train_examples(self, data_dir):
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "train.tsv")), "train")

    def get_dev_examples(self, data_dir):
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "dev.tsv")), "dev")

    def get_test_examples(self, data_dir):
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "test.tsv")), "test")

    def get_labels(self):
        return ["quiet", "noisy"]

    def _create_examples(self, lines, set_type):
        examples = []
        for (i, line) in enumerate(lines):
            guid = "%s-%s" % (set_type, i)
            text_a = tokenization.convert_to_unicode(line[1])
            label = "quiet" if set_type == "test" else tokenization.convert_to_unicode(line[0])
            examples.append(run_classifier.InputExample(guid=guid, text_a=text_a, label=label))
        return examples
'''


@pytest.mark.slow
def test_original_style_processor_file_runs_unchanged(minilm_tf1, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(5)
    for split, count in (("train", 96), ("dev", 32), ("test", 16)):
        rows = []
        for _ in range(count):
            noisy = rng.random() < 0.5
            word = rng.choice(["barked", "roared", "shouted"] if noisy else ["slept", "rested"])
            rows.append(f"{'noisy' if noisy else 'quiet'}\tthe dog {word} all day\n")
        (data / f"{split}.tsv").write_text("".join(rows))
    (tmp_path / "my_processors.py").write_text(PROCESSOR)
    out = tmp_path / "out"
    result = _classifier(
        minilm_tf1,
        out,
        f"--processor={tmp_path / 'my_processors.py'}:AnimalProcessor",
        f"--data_dir={data}",
        "--task_name=animals",
        "--learning_rate=1e-4",
        "--num_train_epochs=2",
        "--do_train",
        "--do_eval",
        "--do_predict",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert _results(out)["eval_accuracy"] >= 0.9
    assert (out / "labels.txt").read_text() == "quiet\nnoisy\n"
    assert np.array(_tsv(out / "test_results.tsv"), dtype=float).shape == (16, 2)
    assert len(_tsv(out / "test_predictions.tsv")) == 17


@pytest.mark.parametrize(
    "content,flags,sentence",
    [
        (b"text,label\nok,a\ncaf\xe9,b\n", [], "line 3: byte 0xe9 is not utf-8 text"),
        (b"text,label\nok,a\nshort\n", [], "line 3: expected at least 2 comma-separated"),
        (b"text,label\nok,a\nfine,b\n", ["--labels=a"], "line 3: label 'b' is not among"),
        (b"text,label\nok,a\nno label,\n", [], "line 3: no label in column"),
        (b'text,label\nok,a\n"never closed,b\n', [], "line 3: unexpected end of data"),
    ],
)
def test_bad_file_is_one_sentence_and_nothing_is_written(
    minilm_tf1, tmp_path, content, flags, sentence
):
    (tmp_path / "train.csv").write_bytes(content)
    out = tmp_path / "out"
    result = _classifier(
        minilm_tf1, out, f"--train_file={tmp_path / 'train.csv'}", "--do_train", *flags
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert sentence in last and str(tmp_path / "train.csv") in last, last
    assert not out.exists()
