"""Classifier examples, features and records against the original `bert.run_classifier`.

The original processors of CoLA, MNLI, MRPC and XNLI and its `convert_single_example` run once,
in a child process, on the fixtures of tests/testdata/glue (each task's official file layout, with
over-long pairs, empty and empty-tokenizing second texts, quotes, accents, CJK, full-width
characters and emoji). Examples, features, the logged lines and the TFRecord layout must match.
"""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from data.glue import processors
from data.glue.features import (
    ClassifierFeatures,
    convert_examples_to_features,
    convert_single_example,
)
from data.glue.processor_base import InputExample, PaddingInputExample
from data.glue.processors import get_processor
from data.glue.records import classifier_dataset, write_classifier_tfrecord
from data.records.input_pipeline import Batching
from data.tokenization.full_tokenizer import FullTokenizer
from tests.helpers.paths import TESTDATA
from tests.oracles import run_oracle

GLUE = os.path.join(TESTDATA, "glue")
VOCAB = os.path.join(GLUE, "vocab.txt")
DIRS = {"cola": "CoLA", "mnli": "MNLI", "mrpc": "MRPC", "xnli": "XNLI"}
# 12 truncates most pairs and long sentences; 64 leaves most untruncated and padded.
LENGTHS = (12, 64)
SETS = [
    (task, s) for task in DIRS for s in ("train", "dev", "test") if (task, s) != ("xnli", "test")
]


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    out = tmp_path_factory.mktemp("original_classifier")
    tasks = ",".join(f"{task}={os.path.join(GLUE, d)}" for task, d in DIRS.items())
    run_oracle(
        "original_classifier_data",
        ["--tasks", tasks, "--vocab_file", VOCAB, "--out_dir", out, "--record_task", "mrpc",
         "--max_seq_lengths", ",".join(map(str, LENGTHS))],
    )  # fmt: skip
    with open(out / "result.json", encoding="utf-8") as f:
        result = json.load(f)
    result["record_file"] = str(out / "mrpc_train.tf_record")
    return result


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(VOCAB, do_lower_case=True)


def _examples(task, set_name):
    processor = get_processor(task)
    return getattr(processor, f"get_{set_name}_examples")(os.path.join(GLUE, DIRS[task]))


def _row(feature):
    return [
        feature.input_ids,
        feature.input_mask,
        feature.segment_ids,
        feature.label_id,
        feature.is_real_example,
    ]


@pytest.mark.parametrize("task,set_name", SETS)
def test_examples_match_original(original, task, set_name):
    ours = [[e.guid, e.text_a, e.text_b, e.label] for e in _examples(task, set_name)]
    assert ours == original[task][set_name]["examples"]


@pytest.mark.parametrize("task,set_name", SETS)
@pytest.mark.parametrize("length", LENGTHS)
def test_features_and_log_match_original(original, tokenizer, caplog, task, set_name, length):
    processor = get_processor(task)
    with caplog.at_level(logging.INFO, logger="absl"):
        features = convert_examples_to_features(
            _examples(task, set_name), processor.get_labels(), length, tokenizer
        )
    reference = original[task][set_name]
    assert [_row(f) for f in features] == reference["features"][str(length)]
    logged = [r.getMessage() for r in caplog.records if r.name == "absl"]
    assert logged == reference["logs"][str(length)]


def test_fixtures_exercise_the_edge_cases(original, tokenizer):
    """The comparison above covers truncation, padding and single-text fallbacks."""
    rows = [r for t, s in SETS for r in original[t][s]["features"]["12"]]
    assert any(0 not in r[1] for r in rows)  # filled to the brim (truncated)
    long_rows = [r for t, s in SETS for r in original[t][s]["features"]["64"]]
    assert any(0 in r[1] for r in long_rows)  # padded
    mrpc = {e.guid: e for e in _examples("mrpc", "train")}
    for guid in ("train-4", "train-5", "train-6"):  # "", zero-width space, a blank
        assert not tokenizer.tokenize(mrpc[guid].text_b or "")
        feature = convert_single_example(9, mrpc[guid], ["0", "1"], 64, tokenizer)
        assert set(feature.segment_ids) == {0}
    assert 1 in original["mrpc"]["train"]["features"]["64"][0][2]


@pytest.mark.parametrize("length", LENGTHS)
def test_padding_example_matches_original(original, tokenizer, length):
    feature = convert_single_example(0, PaddingInputExample(), ["0"], length, tokenizer)
    assert _row(feature) == original["padding"][str(length)]
    assert feature.is_real_example is False


def _parse_records(path):
    records = []
    for raw in tf.data.TFRecordDataset(path):
        example = tf.train.Example.FromString(raw.numpy())
        records.append(
            {
                name: (feature.WhichOneof("kind"), list(getattr(feature, feature.WhichOneof("kind")).value))
                for name, feature in example.features.feature.items()
            }
        )  # fmt: skip
    return records


def test_tfrecord_matches_original(original, tokenizer, tmp_path):
    features = convert_examples_to_features(
        _examples("mrpc", "train"), ["0", "1"], LENGTHS[0], tokenizer
    )
    path = str(tmp_path / "train.tf_record")
    write_classifier_tfrecord(features, path)
    assert _parse_records(path) == _parse_records(original["record_file"])
    assert os.listdir(tmp_path) == ["train.tf_record"]  # no temporary file left


def test_regression_records_and_dataset(tokenizer, tmp_path):
    processor = get_processor("STS-B")
    examples = processor.get_train_examples(os.path.join(GLUE, "STS-B"))
    features = convert_examples_to_features(
        examples, processor.get_labels(), 16, tokenizer, is_regression=True
    )
    assert [f.label_id for f in features] == [5.0, 3.8]
    path = str(tmp_path / "stsb.tf_record")
    write_classifier_tfrecord(features, path)
    assert _parse_records(path)[1]["label_ids"] == ("float_list", [pytest.approx(3.8)])
    (batch,) = list(classifier_dataset(path, 16, True, 8, is_training=False))
    assert batch["label_ids"].dtype == tf.float32
    np.testing.assert_allclose(batch["label_ids"].numpy(), [5.0, 3.8], rtol=1e-6)
    assert batch["input_ids"].dtype == tf.int32


def test_classifier_dataset_orders(tmp_path):
    features = [ClassifierFeatures([i] * 4, [1] * 4, [0] * 4, i % 3, i != 9) for i in range(10)]
    path = str(tmp_path / "eval.tf_record")
    write_classifier_tfrecord(features, path)
    batches = list(classifier_dataset(path, 4, False, 4, is_training=False))
    assert [b["input_ids"].shape[0] for b in batches] == [4, 4, 2]  # last batch kept
    assert np.concatenate([b["input_ids"][:, 0] for b in batches]).tolist() == list(range(10))
    assert batches[-1]["is_real_example"].numpy().tolist() == [1, 0]
    assert {k: v.dtype for k, v in batches[0].items()} == dict.fromkeys(batches[0], tf.int32)
    # Read on the caller's thread (one CPU replica): the same batches.
    foreground = list(
        classifier_dataset(path, 4, False, 4, False, batching=Batching(background=False))
    )
    for got, want in zip(foreground, batches, strict=True):
        assert {k: v.numpy().tolist() for k, v in got.items()} == {
            k: v.numpy().tolist() for k, v in want.items()
        }

    def first_ids(seed, skip=0, count=6):
        ds = classifier_dataset(path, 4, False, 4, True, seed=seed, skip_batches=skip)
        return [b["input_ids"][:, 0].numpy().tolist() for b in ds.take(count)]

    run = first_ids(7)
    assert all(len(b) == 4 for b in run)  # repeated, full batches only
    in_order = [[(4 * b + i) % 10 for i in range(4)] for b in range(6)]
    assert run != in_order  # shuffled
    assert {v for b in run for v in b} <= set(range(10))
    assert first_ids(7) == run  # same seed, same batches
    assert first_ids(7, skip=2, count=4) == run[2:]  # resume


def test_convert_single_example_errors_and_logging(tokenizer, caplog):
    example = InputExample("dev-3", "the dog", "the cat", "2")
    with pytest.raises(ValueError, match=r"dev-3: unknown label '2'; the labels are \['0', '1'\]"):
        convert_single_example(0, example, ["0", "1"], 16, tokenizer)
    with pytest.raises(ValueError, match="dev-3: the target must be a number, got 'x'"):
        convert_single_example(0, InputExample("dev-3", "a", None, "x"), [], 8, tokenizer, True)
    with caplog.at_level(logging.INFO, logger="absl"):
        convert_single_example(5, InputExample("g", "the", None, "0"), ["0", "1"], 8, tokenizer)
        convert_single_example(4, InputExample("r", "the", None, "2.5"), [], 8, tokenizer, True)
    assert [r.getMessage() for r in caplog.records][-1] == "label: 2.5 (id = 2.5)"
    assert "guid: g" not in [r.getMessage() for r in caplog.records]  # only the first 5


def test_mnli_extra_sets_and_get_processor():
    mnli = get_processor("MNLI")
    data_dir = os.path.join(GLUE, "MNLI")
    dev = mnli.get_dev_sets(data_dir)
    assert list(dev) == ["dev_matched", "dev_mismatched"]
    assert vars(dev["dev_matched"][1]) == vars(mnli.get_dev_examples(data_dir)[1])
    assert [e.guid for e in dev["dev_mismatched"]] == ["dev_mismatched-500", "dev_mismatched-501"]
    assert [e.label for e in dev["dev_mismatched"]] == ["neutral", "contradiction"]
    test = mnli.get_test_sets(data_dir)
    assert list(test) == ["MNLI-m", "MNLI-mm"]
    assert [e.guid for e in test["MNLI-m"]] == ["test-0", "test-1"]
    assert [(e.guid, e.label) for e in test["MNLI-mm"]] == [
        ("test_mismatched-7000", "contradiction")
    ]
    for alias in ("mnli", "MNLI-m", "mnli_mm", "MultiNLI"):
        assert isinstance(get_processor(alias), type(mnli))
    assert sorted(processors.PROCESSORS) == sorted(
        ["cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli", "ax", "xnli"]
    )
    with pytest.raises(ValueError) as err:
        get_processor("glue")
    assert str(err.value) == f"Task not found: glue. Known tasks: {sorted(processors.PROCESSORS)}"
    with pytest.raises(ValueError, match="Task cola does not take the options"):
        get_processor("cola", language="en")
