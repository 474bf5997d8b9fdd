"""benchmarks.quantized_agreement: each export's answers scored against the gold of the file,
agreement with float32 and the runner's predictions, on answers fixed by hand."""

import json

import pytest

import serving.predictor
from benchmarks import quantized_agreement

_TEST = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\n"


class _Fixed:
    """A predictor whose answers are fixed per instance text."""

    precision = "test"

    def __init__(self, answers):
        self.answers = answers

    def predict(self, instances):
        assert len(instances) <= 1  # --batch=1
        return [self.answers[x.get("text") or x["question"]] for x in instances]


def _predictors(monkeypatch, by_export):
    monkeypatch.setattr(
        serving.predictor, "load_predictor", lambda d, num_threads=None: _Fixed(by_export[d])
    )


def test_ner(tmp_path, monkeypatch):
    (tmp_path / "test.txt").write_text(_TEST)
    gold = {
        "EU rejects German call": ["B-ORG", "O", "B-MISC", "O"],
        "Peter Blackburn": ["B-PER", "I-PER"],
    }
    # int8 misses MISC: 2 of 3 entities found, none wrong: P 100, R 66.67, F1 80.
    int8 = {**gold, "EU rejects German call": ["B-ORG", "O", "O", "O"]}
    _predictors(
        monkeypatch,
        {
            "f32": {t: {"tags": tags} for t, tags in gold.items()},
            "int8": {t: {"tags": tags} for t, tags in int8.items()},
        },
    )
    (tmp_path / "pred.txt").write_text(
        "EU B-ORG B-ORG\nrejects O O\nGerman B-MISC B-MISC\ncall O O\n\n"
        "Peter B-PER B-PER\nBlackburn I-PER B-PER\n"
    )
    args = [
        "--task=ner",
        f"--data={tmp_path / 'test.txt'}",
        "--float32_export=f32",
        "--int8_export=int8",
        "--batch=1",
        f"--runner_predictions={tmp_path / 'pred.txt'}",
        f"--json={tmp_path / 'out.json'}",
    ]
    quantized_agreement.main(args)
    result = json.loads((tmp_path / "out.json").read_text())
    rows = result["rows"]
    assert rows["float32"]["f1"] == 100.0
    assert rows["int8"]["precision"] == 100.0
    assert rows["int8"]["recall"] == pytest.approx(200 / 3)
    assert rows["int8"]["f1"] == pytest.approx(80.0)
    assert result["f1_gap_int8_minus_float32"] == pytest.approx(-20.0)
    assert rows["int8"]["identical_to_float32"] == 50.0
    # The runner split Peter Blackburn in two: 2 of 4 predicted right, 2 of 3 gold found.
    assert rows["runner"]["f1"] == pytest.approx(100 * 2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert rows["runner"]["identical_to_float32"] == 50.0


def test_squad(tmp_path, monkeypatch):
    qas = [
        {"id": "a", "question": "who sat?", "answers": [{"text": "The cat", "answer_start": 0}]},
        {"id": "b", "question": "where?", "answers": [{"text": "on the mat", "answer_start": 8}]},
    ]
    context = "The cat sat on the mat in Paris."
    dataset = {"version": "1.1", "data": [{"paragraphs": [{"context": context, "qas": qas}]}]}
    (tmp_path / "dev.json").write_text(json.dumps(dataset))
    answers = {"who sat?": "cat", "where?": "on the mat"}
    _predictors(
        monkeypatch,
        {
            "f32": {q: {"answer": a} for q, a in answers.items()},
            # "the mat" against "on the mat": "mat" against "on mat", P 1, R 1/2, F1 2/3.
            "int8": {q: {"answer": a} for q, a in {**answers, "where?": "the mat"}.items()},
        },
    )
    (tmp_path / "predictions.json").write_text(json.dumps({"a": "The cat", "b": "Paris"}))
    quantized_agreement.main(
        [
            "--task=squad",
            f"--data={tmp_path / 'dev.json'}",
            "--float32_export=f32",
            "--int8_export=int8",
            "--batch=1",
            f"--runner_predictions={tmp_path / 'predictions.json'}",
            f"--json={tmp_path / 'out.json'}",
        ]
    )
    rows = json.loads((tmp_path / "out.json").read_text())["rows"]
    assert rows["float32"]["f1"] == 100.0 and rows["float32"]["exact_match"] == 100.0
    assert rows["int8"]["f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert rows["int8"]["exact_match"] == 50.0
    assert rows["int8"]["identical_to_float32"] == 50.0
    assert rows["runner"]["f1"] == 50.0 and rows["runner"]["identical_to_float32"] == 0.0
