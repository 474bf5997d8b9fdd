"""SQuAD examples, features, records and prediction files against the original `bert.run_squad`.

The original reader, `convert_examples_to_features`, `FeatureWriter`, `write_predictions` and
`get_final_text` run once, in a child process, on the fixtures of tests/testdata/squad (the
SQuAD 1.1 and 2.0 train/dev layouts; see its README) with the uncased vocabulary of
all-MiniLM-L6-v2. Examples, features, logged lines, TFRecords and the prediction files (byte for
byte, on seeded random logits) must match.
"""

import json
import logging
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from data.squad.examples import SquadExample, read_squad_examples
from data.squad.features import convert_examples_to_features
from data.squad.postprocess import RawResult, get_final_text, write_predictions
from data.squad.records import squad_feature_spec, write_squad_tfrecord
from data.tokenization.full_tokenizer import FullTokenizer
from tests.helpers.minilm import minilm_vocab
from tests.helpers.paths import TESTDATA
from tests.oracles import run_oracle

SQUAD = os.path.join(TESTDATA, "squad")
VOCAB = minilm_vocab()
# (max_seq_length, doc_stride, max_query_length): "short" cuts the long paragraph into many
# overlapping windows and truncates the long question; "long" needs fewer windows; "adjacent"
# strides by more than its window (run_squad.py --max_seq_length=128 with the default stride
# is such a setting): the windows meet without overlap, as the original cuts them.
SETTINGS = {"short": (64, 16, 12), "long": (128, 48, 64), "adjacent": (48, 64, 12)}
# File stem -> (is_training, version_2_with_negative).
FILES = {
    "train-v1.1": (True, False),
    "dev-v1.1": (False, False),
    "train-v2.0": (True, True),
    "dev-v2.0": (False, True),
}
CONVERSIONS = [f"{stem}-{setting}" for stem in FILES for setting in SETTINGS]
# name -> (conversion, n_best_size, max_answer_length, version 2, threshold, verbose_logging)
PREDICTIONS = {
    "v1-n20-a30": ("dev-v1.1-short", 20, 30, False, 0.0, False),
    "v1-n3-a5": ("dev-v1.1-long", 3, 5, False, 0.0, True),
    "v2-n20-a30-t0": ("dev-v2.0-short", 20, 30, True, 0.0, False),
    "v2-n3-a5-t5": ("dev-v2.0-long", 3, 5, True, 5.0, True),
    "v2-n20-a5-tneg": ("dev-v2.0-short", 20, 5, True, -2.5, True),
    # Values the original ran (with a warning here): no candidate, every answer 'empty'.
    "v1-n0-a30": ("dev-v1.1-short", 0, 30, False, 0.0, False),
    "v1-n20-a0": ("dev-v1.1-long", 20, 0, False, 0.0, False),
}
RECORDS = ("train-v2.0-short", "dev-v1.1-short")
FINAL_TEXT_CASES = [
    ["steve smith", "Steve Smith's", True],
    ["1895", "(1895-1943).", True],
    ["jose", "Jos\u00e9,", True],
    ["sao paulo", "S\u00e3o Paulo", True],
    ["sao paulo", "S\u00e3o Paulo", False],  # cased: not found
    ["S\u00e3o", "S\u00e3o Paulo,", False],
    ["resume of taste", "Re\u0301sume\u0301 of taste.", True],  # combining accents removed
    ["5 may", "5\u00a0May", True],  # a no-break space inside one word
    ["[UNK]", "\U0001f35c", True],
    ["\u6771 \u4eac", "\u6771\u4eac", True],
    ["", "abc", True],
    ["", "\u200b", True],
    ["a b", "A  B!", True],
]


def _conversion_args(name):
    stem, setting = name.rsplit("-", 1)
    is_training, version_2 = FILES[stem]
    return os.path.join(SQUAD, f"{stem}.json"), is_training, version_2, SETTINGS[setting]


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(VOCAB, do_lower_case=True)


def _convert(name, tokenizer):
    input_file, is_training, version_2, (length, stride, query) = _conversion_args(name)
    examples = read_squad_examples(input_file, is_training, version_2)
    return examples, convert_examples_to_features(
        examples, tokenizer, length, stride, query, is_training
    )


def _random_logits(features, seed, plant_all):
    """Seeded float32 logits with answer-like peaks, so that most questions get real spans.

    In each feature a random valid span (start in its max-context tokens, up to 4 tokens)
    gets a boost; with `plant_all` every feature gets one (SQuAD 2.0 must always find a
    non-null span: the original fails otherwise), else about half. For about 40% of the
    examples every window gets a high [CLS] score, like an unanswerable question, so that
    the null score comes near the best span's and the threshold decides.
    """
    rng = np.random.default_rng(seed)
    length = len(features[0].input_ids)
    start_logits = rng.normal(0.0, 2.0, size=(len(features), length)).astype(np.float32)
    end_logits = rng.normal(0.0, 2.0, size=(len(features), length)).astype(np.float32)
    null_boost = {}
    for row, feature in enumerate(features):
        starts = [p for p, best in feature.token_is_max_context.items() if best]
        if starts and (plant_all or rng.random() < 0.5):
            start = int(rng.choice(starts))
            end = min(start + int(rng.integers(0, 4)), max(feature.token_to_orig_map))
            start_logits[row, start] += rng.uniform(8.0, 12.0)
            end_logits[row, end] += rng.uniform(8.0, 12.0)
        if feature.example_index not in null_boost:
            null_boost[feature.example_index] = rng.uniform(8.0, 14.0) * (rng.random() < 0.4)
        start_logits[row, 0] += null_boost[feature.example_index]
        end_logits[row, 0] += null_boost[feature.example_index]
    unique_ids = np.array([f.unique_id for f in features], dtype=np.int64)
    return {"unique_ids": unique_ids, "start_logits": start_logits, "end_logits": end_logits}


@pytest.fixture(scope="module")
def original(tmp_path_factory, tokenizer):
    out = tmp_path_factory.mktemp("original_squad")
    plan = {"vocab_file": VOCAB, "do_lower_case": True, "conversions": [], "predictions": []}
    for name in CONVERSIONS:
        input_file, is_training, version_2, (length, stride, query) = _conversion_args(name)
        plan["conversions"].append(
            {
                "name": name,
                "input_file": input_file,
                "is_training": is_training,
                "version_2_with_negative": version_2,
                "max_seq_length": length,
                "doc_stride": stride,
                "max_query_length": query,
                "record_file": str(out / f"{name}.tf_record") if name in RECORDS else None,
            }
        )
    logits = {}
    for seed, (name, (conversion, n_best, max_len, v2, threshold, verbose)) in enumerate(
        PREDICTIONS.items()
    ):
        logits[name] = _random_logits(_convert(conversion, tokenizer)[1], seed, plant_all=v2)
        np.savez(out / f"{name}.npz", **logits[name])
        plan["predictions"].append(
            {
                "name": name,
                "conversion": conversion,
                "logits": str(out / f"{name}.npz"),
                "n_best_size": n_best,
                "max_answer_length": max_len,
                "version_2_with_negative": v2,
                "null_score_diff_threshold": threshold,
                "verbose_logging": verbose,
                "output_dir": str(out / name),
            }
        )
    plan["final_text"] = FINAL_TEXT_CASES
    with open(out / "plan.json", "w", encoding="utf-8") as f:
        json.dump(plan, f)
    run_oracle("original_squad", ["--plan", out / "plan.json", "--out_dir", out])
    with open(out / "result.json", encoding="utf-8") as f:
        result = json.load(f)
    result["dir"] = out
    result["logits"] = logits
    return result


# What this project adds to the original's "Could not find answer" warning: the question.
_SKIPPED_QUESTION = re.compile(r" \(SQuAD file .*, question '[^']*'\); the question is skipped\.$")


def _absl_messages(caplog):
    """The absl log lines, as the original writes them (without the skipped question's id)."""
    return [_SKIPPED_QUESTION.sub("", r.getMessage()) for r in caplog.records if r.name == "absl"]


def _example_row(e):
    return [
        e.qas_id,
        e.question_text,
        e.doc_tokens,
        e.orig_answer_text,
        e.start_position,
        e.end_position,
        e.is_impossible,
    ]


def _feature_row(f):
    return [
        f.unique_id,
        f.example_index,
        f.doc_span_index,
        f.tokens,
        [list(item) for item in f.token_to_orig_map.items()],
        [list(item) for item in f.token_is_max_context.items()],
        f.input_ids,
        f.input_mask,
        f.segment_ids,
        f.start_position,
        f.end_position,
        f.is_impossible,
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", CONVERSIONS)
def test_examples_features_and_logs_match_original(original, tokenizer, caplog, name):
    input_file, is_training, version_2, (length, stride, query) = _conversion_args(name)
    reference = original["conversions"][name]
    with caplog.at_level(logging.INFO, logger="absl"):
        examples = read_squad_examples(input_file, is_training, version_2)
    assert [_example_row(e) for e in examples] == reference["examples"]
    assert _absl_messages(caplog) == reference["read_logs"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="absl"):
        features = convert_examples_to_features(
            examples, tokenizer, length, stride, query, is_training
        )
    assert [_feature_row(f) for f in features] == reference["features"]
    assert _absl_messages(caplog) == reference["convert_logs"]


def test_fixtures_exercise_the_edge_cases(original, tokenizer):
    """The comparisons above cover what the original handles specially."""
    conversions = original["conversions"]
    # The answer with a typo'd text is dropped for training, kept for prediction.
    assert conversions["train-v1.1-short"]["read_logs"] == [
        "Could not find answer: '1998.' vs. '1999'"
    ]
    assert "opened-typo" in [row[0] for row in conversions["dev-v1.1-short"]["examples"]]
    examples, features = _convert("train-v1.1-short", tokenizer)
    by_id = {e.qas_id: i for i, e in enumerate(examples)}

    def answers(qas_id):
        return [
            f.tokens[f.start_position : f.end_position + 1]
            for f in features
            if f.example_index == by_id[qas_id]
        ]

    assert examples[by_id["smith-born"]].doc_tokens[5] == "(1895-1943)."
    assert answers("smith-born") == [["1895"]]  # narrowed by _improve_answer_span
    assert answers("japan") == [["japanese"]]  # cannot be narrowed
    assert answers("steve") == [["steve", "smith"]]
    assert answers("city") == [["sao", "paulo"]]  # the answer started on a space
    assert examples[by_id["city"]].start_position == 3  # "in"
    assert answers("distance") == [["10", "km"]]  # split on U+202F
    assert examples[by_id["owner"]].doc_tokens[0] == "Caf\u00e9"  # leading whitespace
    # The long paragraph: many windows, the answer outside some of them (labelled 0).
    canal = answers("canal")
    assert len(canal) > 5 and ["1811"] in canal and ["[CLS]"] in canal
    assert max(f.doc_span_index for f in features) >= 8
    question = features[[f.example_index for f in features].index(by_id["bridge-engineer"])]
    assert question.tokens.index("[SEP]") == 13  # question cut to max_query_length 12
    impossible = _convert("train-v2.0-long", tokenizer)[1]
    assert any(f.is_impossible and f.start_position == 0 for f in impossible)


@pytest.mark.parametrize("name", RECORDS)
def test_tfrecord_matches_original(original, tokenizer, tmp_path, name):
    _, features = _convert(name, tokenizer)
    is_training = _conversion_args(name)[1]
    path = str(tmp_path / "out.tf_record")
    write_squad_tfrecord(features, path, is_training)
    assert os.listdir(tmp_path) == ["out.tf_record"]  # no temporary file left
    ours = _records(path)
    assert ours == _records(str(original["dir"] / f"{name}.tf_record"))
    expected_keys = {"unique_ids", "input_ids", "input_mask", "segment_ids"}
    if is_training:
        expected_keys |= {"start_positions", "end_positions", "is_impossible"}
    assert set(ours[0]) == expected_keys
    length = len(features[0].input_ids)
    spec = squad_feature_spec(length, is_training)
    assert set(spec) == expected_keys - {"is_impossible"}  # never parsed, as the original
    for raw, feature in zip(tf.data.TFRecordDataset(path), features, strict=True):
        parsed = tf.io.parse_single_example(raw, spec)
        assert int(parsed["unique_ids"]) == feature.unique_id
        assert parsed["input_ids"].numpy().tolist() == feature.input_ids
        assert parsed["segment_ids"].numpy().tolist() == feature.segment_ids
        if is_training:
            assert int(parsed["start_positions"]) == feature.start_position
            assert int(parsed["end_positions"]) == feature.end_position


def _records(path):
    records = []
    for raw in tf.data.TFRecordDataset(path):
        example = tf.train.Example.FromString(raw.numpy())
        records.append(
            {
                name: (feature.WhichOneof("kind"), list(feature.int64_list.value))
                for name, feature in example.features.feature.items()
            }
        )
    return records


@pytest.mark.parametrize("name", PREDICTIONS)
def test_prediction_files_match_original(original, tokenizer, tmp_path, caplog, name):
    conversion, n_best, max_len, v2, threshold, verbose = PREDICTIONS[name]
    examples, features = _convert(conversion, tokenizer)
    logits = original["logits"][name]
    # As the original's prediction loop delivers them: Python floats of float32 values.
    results = [
        RawResult(int(u), [float(x) for x in s], [float(x) for x in e])
        for u, s, e in zip(
            logits["unique_ids"], logits["start_logits"], logits["end_logits"], strict=True
        )
    ]
    files = ["predictions.json", "nbest_predictions.json", "null_odds.json"]
    with caplog.at_level(logging.INFO, logger="absl"):
        predictions = write_predictions(
            examples, features, results, n_best, max_len, True,
            *(str(tmp_path / f) for f in files),
            version_2_with_negative=v2, null_score_diff_threshold=threshold,
            verbose_logging=verbose,
        )  # fmt: skip
    reference = original["dir"] / name
    assert sorted(os.listdir(tmp_path)) == sorted(os.listdir(reference))
    for file_name in os.listdir(reference):
        assert (tmp_path / file_name).read_bytes() == (reference / file_name).read_bytes()
    with open(reference / "predictions.json", encoding="utf-8") as f:
        assert predictions == json.load(f)
    logs = _absl_messages(caplog)
    assert logs[:2] == [
        f"Writing predictions to: {tmp_path / 'predictions.json'}",
        f"Writing nbest to: {tmp_path / 'nbest_predictions.json'}",
    ]
    assert logs[2:] == original["predictions"][name]["logs"][2:]


def test_predictions_cover_the_interesting_cases(original):
    """The seeded logits reach each outcome at least once."""

    def load(name, file_name):
        with open(original["dir"] / name / file_name, encoding="utf-8") as f:
            return json.load(f)

    v1 = list(load("v1-n3-a5", "predictions.json").values())
    assert "empty" in v1  # no valid span among the top 3 x 3
    for name, (_, n_best, _, v2, threshold, _) in PREDICTIONS.items():
        if v2:
            predictions = load(name, "predictions.json").values()
            assert "" in predictions and any(predictions), name
            odds = load(name, "null_odds.json").values()
            # A nonzero threshold changes at least one answer from what 0.0 would give.
            if threshold:
                assert any(min(0, threshold) < x <= max(0, threshold) for x in odds), name
            nbest = load(name, "nbest_predictions.json").values()
            assert any(len(entries) == n_best + 1 for entries in nbest), name  # null appended
    messages = [m for job in original["predictions"].values() for m in job["logs"][2:]]
    assert any(m.startswith("Unable to find text") for m in messages)  # [UNK]
    assert any(m.startswith("Length not equal") for m in messages)


def test_get_final_text_matches_original(original, caplog):
    for (pred_text, orig_text, do_lower_case), (expected, logs) in zip(
        FINAL_TEXT_CASES, original["final_text"], strict=True
    ):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="absl"):
            text = get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=True)
        assert (text, _absl_messages(caplog)) == (expected, logs), (pred_text, orig_text)
    assert get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)
    return str(path)


def _squad(qas, context="The cat sat on the mat."):
    return {"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def test_bad_input_gives_clear_errors(tmp_path, tokenizer):
    missing = str(tmp_path / "missing.json")
    with pytest.raises(ValueError, match=r"Cannot read SQuAD file .*missing\.json"):
        read_squad_examples(missing, False)
    broken = tmp_path / "broken.json"
    broken.write_text('{"data": [', encoding="utf-8")
    with pytest.raises(ValueError, match=r"Cannot read SQuAD file .*broken\.json"):
        read_squad_examples(str(broken), False)
    no_data = _write_json(tmp_path / "no_data.json", {"version": "1.1"})
    with pytest.raises(ValueError, match=r"no_data\.json: missing the 'data' field"):
        read_squad_examples(no_data, False)

    def error(qas, is_training=True, version_2=False, **kwargs):
        path = _write_json(tmp_path / "bad.json", _squad(qas, **kwargs))
        with pytest.raises(ValueError) as err:
            read_squad_examples(path, is_training, version_2)
        assert "bad.json" in str(err.value)
        return str(err.value)

    answer = {"text": "cat", "answer_start": 4}
    assert "question 'q1': for training, each question should have exactly 1 answer; it has 0" in (
        error([{"id": "q1", "question": "Who?", "answers": []}])
    )
    assert "question 'q2': for training, each question should have exactly 1 answer; it has 2" in (
        error([{"id": "q2", "question": "Who?", "answers": [answer, answer]}])
    )
    assert "question 'q3': missing the 'answers' field" in error([{"id": "q3", "question": "?"}])
    assert "question 'q4': missing the 'is_impossible' field" in error(
        [{"id": "q4", "question": "Who?", "answers": [answer]}], version_2=True
    )
    assert "question 'q5': answer_start 40 with an answer of 3 characters does not fit" in error(
        [{"id": "q5", "question": "Who?", "answers": [{"text": "cat", "answer_start": 40}]}]
    )
    assert "question 'q6': missing the 'question' field" in error([{"id": "q6"}], False)
    assert "question None: missing the 'id' field" in error([{"question": "?"}], False)
    assert "'context' should be of type str" in error([], False, context=None)
    # A dev file (several answers per question) read as training data.
    with pytest.raises(ValueError, match="question 'smith-born': for training, each question"):
        read_squad_examples(os.path.join(SQUAD, "dev-v1.1.json"), True)
    # Impossible questions need no answers.
    ok = _write_json(
        tmp_path / "ok.json", _squad([{"id": "q", "question": "?", "is_impossible": True}])
    )
    (example,) = read_squad_examples(ok, True, True)
    assert (example.is_impossible, example.start_position, example.orig_answer_text) == (
        True,
        -1,
        "",
    )

    examples = [SquadExample("q", "Who?", ["The", "cat."])]
    with pytest.raises(ValueError, match=r"max_seq_length \(16\) must be greater than"):
        convert_examples_to_features(examples, tokenizer, 16, 8, 13, False)
    with pytest.raises(ValueError, match="doc_stride must be at least 1, got 0"):
        convert_examples_to_features(examples, tokenizer, 16, 0, 4, False)
    features = convert_examples_to_features(examples, tokenizer, 16, 8, 4, False)
    with pytest.raises(ValueError, match="No result for feature 1000000000 of question 'q'"):
        write_predictions(examples, features, [], 20, 30, True, *(str(tmp_path / n) for n in "abc"))


def test_squad2_without_any_span_predicts_no_answer(tmp_path, tokenizer):
    """Where the original fails (no non-null entry), the answer is "" and the null odds are
    the null score itself."""
    examples = [SquadExample("q", "Who?", ["The", "cat."])]
    features = convert_examples_to_features(examples, tokenizer, 16, 8, 4, False)
    start = [5.0] + [0.0] * 15  # the best start and end are both [CLS]: no span is valid
    result = RawResult(features[0].unique_id, start, [-1.0] + [-9.0] * 15)
    paths = [str(tmp_path / n) for n in ("p.json", "n.json", "o.json")]
    predictions = write_predictions(
        examples, features, [result], 1, 30, True, *paths, version_2_with_negative=True
    )
    assert predictions == {"q": ""}
    with open(paths[2], encoding="utf-8") as f:
        assert json.load(f) == {"q": 4.0}
    with open(paths[1], encoding="utf-8") as f:
        assert json.load(f)["q"] == [
            {"text": "", "probability": 1.0, "start_logit": 5.0, "end_logit": -1.0}
        ]


def test_a_skipped_answer_names_its_question(tmp_path, caplog):
    context = "Ada Lovelace wrote the first program in 1843."
    qas = [
        {"id": "q-typo", "question": "When?", "answers": [{"text": "1844", "answer_start": 40}]},
        {"id": "q-ok", "question": "Who?", "answers": [{"text": "Ada", "answer_start": 0}]},
    ]
    path = tmp_path / "train.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}))
    with caplog.at_level(logging.WARNING, logger="absl"):
        examples = read_squad_examples(str(path), is_training=True)
    assert [e.qas_id for e in examples] == ["q-ok"]
    assert [r.getMessage() for r in caplog.records if r.name == "absl"] == [
        f"Could not find answer: '1843.' vs. '1844' (SQuAD file {path}, question 'q-typo'); "
        "the question is skipped."
    ]
