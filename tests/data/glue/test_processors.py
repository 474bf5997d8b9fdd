"""The GLUE tasks the original lacked, against Model Garden's readers, and bad input.

The oracle for SST-2, STS-B, QQP, QNLI, RTE, WNLI and AX is tf-models-official's
`official.nlp.data.classifier_data_lib` (Model Garden). Its processors read
`tfds.load("glue/<task>")`, not files; here that call is answered by TensorFlow Datasets' own GLUE
builder (`tensorflow_datasets.text.glue`) parsing the fixture files of tests/testdata/glue (each
task's official file layout), through TFDS's serialize, parse and decode steps. So both the reading
of the official files and the making of examples come from code outside this project. Where the
two projects follow different conventions (guid numbering, set names, the STS-B label type, the
order of AX's pair), the test asserts the difference explicitly.
"""

import contextlib
import csv
import os
import shutil
import types
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf
from official.nlp.data import classifier_data_lib
from tensorflow_datasets.core import example_parser, example_serializer
from tensorflow_datasets.text import glue as tfds_glue

from data.glue.processor_base import DataProcessor, InputExample
from data.glue.processors import PROCESSORS, get_processor
from tests.helpers.glue_tasks import write_sst2
from tests.helpers.paths import TESTDATA

GLUE = os.path.join(TESTDATA, "glue")


def _tuples(examples):
    return [(e.guid, e.text_a, e.text_b, e.label) for e in examples]


FOLDERS = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "qqp": "QQP", "mnli": "MNLI",
           "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI", "ax": "diagnostic", "stsb": "STS-B"}  # fmt: skip

# Model Garden's processor per task; its TFDS GLUE config has the same name as our task.
MODEL_GARDEN = {
    "sst2": classifier_data_lib.SstProcessor,
    "stsb": classifier_data_lib.StsBProcessor,
    "qqp": classifier_data_lib.QqpProcessor,
    "qnli": classifier_data_lib.QnliProcessor,
    "rte": classifier_data_lib.RteProcessor,
    "wnli": classifier_data_lib.WnliProcessor,
    "ax": classifier_data_lib.AxProcessor,
}
# Our set name -> the TFDS split Model Garden loads for it.
TFDS_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
# The file of each TFDS split, as the TFDS GLUE builder's split generators name them.
TFDS_FILES = {"train": "train.tsv", "validation": "dev.tsv", "test": "test.tsv"}


def _path(task, split):
    """Returns the fixture file of a TFDS split, or None where the task has no such split."""
    if task == "ax":
        # The TFDS AX config has one split, test: the diagnostic.tsv of the GLUE site.
        return os.path.join(GLUE, FOLDERS[task], "diagnostic.tsv") if split == "test" else None
    return os.path.join(GLUE, FOLDERS[task], TFDS_FILES[split])


# Every set the fixture folder has (AX: the test set only).
CASES = [
    (task, set_name)
    for task in sorted(MODEL_GARDEN)
    for set_name, split in TFDS_SPLITS.items()
    if _path(task, split) and os.path.isfile(_path(task, split))
]

# Sets whose guids follow another convention than Model Garden's (which numbers the examples
# from 0): SST-2's train/dev have no id column, so ours count lines with the header as line 0, as
# the original's processors do; QQP's train/dev ids are Quora pair ids, which ours keep.
LINE_NUMBER_GUIDS = {("sst2", "train"), ("sst2", "dev")}
PAIR_ID_GUIDS = {("qqp", "train"), ("qqp", "dev")}


def _tfds_dataset(task, split):
    """Returns what `tfds.load(f"glue/{task}", split=split)` yields for the fixture files.

    The TFDS GLUE builder reads the file; each example goes through the builder's features the
    way `tfds.load` stores and reads it (encode, serialize to tf.Example, parse, decode).
    """
    # Nothing is prepared or stored, so the builder needs no data directory of its own.
    builder = tfds_glue.Glue(config=task, data_dir=os.devnull)
    features = builder.info.features
    serializer = example_serializer.ExampleSerializer(features.get_serialized_info())
    parser = example_parser.ExampleParser(features.get_serialized_info())
    path = _path(task, split)
    records = [
        serializer.serialize_example(features.encode_example(example))
        for _, example in builder._generate_examples(data_file=path, split=split)
    ]
    return (
        tf.data.Dataset.from_tensor_slices(records)
        .map(parser.parse_example)
        .map(features.decode_example)
    )


def _fake_tfds_load(name, split, **unused_kwargs):
    dataset, config = name.split("/")
    assert dataset == "glue"
    return _tfds_dataset(config, split)


@contextlib.contextmanager
def _model_garden_on_fixtures():
    """Makes Model Garden's `tfds.load` serve the fixture files instead of downloads."""
    with mock.patch.object(
        classifier_data_lib, "tfds", types.SimpleNamespace(load=_fake_tfds_load)
    ):
        yield


def _first_column(task, set_name):
    """Returns the first column (the id) of each data row, numbered as TFDS numbers them."""
    with open(_path(task, TFDS_SPLITS[set_name]), encoding="utf-8", newline="") as f:
        # The TFDS builder's reader: its `idx` counts the rows of this DictReader.
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [row[rows.fieldnames[0]] for row in rows]


def _guid_parts(examples):
    sets, keys = zip(*(e.guid.split("-", 1) for e in examples), strict=True)
    return set(sets), list(keys)


@pytest.mark.parametrize("task,set_name", CASES)
def test_glue_examples_match_model_garden(task, set_name):
    ours_processor = get_processor(task)
    theirs_processor = MODEL_GARDEN[task]()
    data_dir = os.path.join(GLUE, FOLDERS[task])
    ours = getattr(ours_processor, f"get_{set_name}_examples")(data_dir)
    with _model_garden_on_fixtures():
        theirs = getattr(theirs_processor, f"get_{set_name}_examples")(data_dir)
    # TFDS's row numbers (from 0 after the header) of the rows it kept, in Model Garden's order.
    rows = [int(e["idx"]) for e in _tfds_dataset(task, TFDS_SPLITS[set_name]).as_numpy_iterator()]
    rows.sort()
    assert len(ours) == len(theirs) == len(rows) > 0

    ours_texts = [(e.text_a, e.text_b) for e in ours]
    theirs_texts = [(e.text_a, e.text_b) for e in theirs]
    if task == "ax":
        # Model Garden puts the hypothesis first (as in its MNLI); ours keep the original's MNLI
        # order, premise (sentence1) first, which the MNLI-fine-tuned model that predicts AX saw.
        theirs_texts = [(b, a) for a, b in theirs_texts]
    assert ours_texts == theirs_texts

    ours_labels = [e.label for e in ours]
    theirs_labels = [e.label for e in theirs]
    if task == "stsb":
        # Ours keep the score's text (the test set's placeholder "0"), as the original keeps every
        # label a string; Model Garden makes a float of TFDS's float32 score (test set: 0.0).
        assert all(type(label) is str for label in ours_labels)
        assert all(type(label) is float for label in theirs_labels)
        assert [float(np.float32(label)) for label in ours_labels] == theirs_labels
        assert ours_processor.is_regression and theirs_processor.is_regression
        # Model Garden's STS-B has no label list; ours name the one output column.
        assert ours_processor.get_labels() == ["score"] and theirs_processor.get_labels() is None
    else:
        assert ours_labels == theirs_labels
        assert not ours_processor.is_regression and not theirs_processor.is_regression
        assert ours_processor.get_labels() == theirs_processor.get_labels()

    ours_sets, ours_keys = _guid_parts(ours)
    theirs_sets, theirs_keys = _guid_parts(theirs)
    # Model Garden names the sets after the TFDS splits ("validation" for dev.tsv); ours after
    # the files, as the original does.
    assert ours_sets == {set_name} and theirs_sets == {TFDS_SPLITS[set_name]}
    assert theirs_keys == [str(i) for i in range(len(theirs))]
    if (task, set_name) in LINE_NUMBER_GUIDS:
        assert ours_keys == [str(row + 1) for row in rows]
    elif (task, set_name) in PAIR_ID_GUIDS:
        ids = _first_column(task, set_name)
        assert ours_keys == [ids[row] for row in rows]
        assert ours_keys != theirs_keys
    else:
        assert ours_keys == theirs_keys


LEADERBOARD = {
    "cola": ({"CoLA"}, ["0", "1"]),
    "sst2": ({"SST-2"}, ["0", "1"]),
    "mrpc": ({"MRPC"}, ["0", "1"]),
    "qqp": ({"QQP"}, ["0", "1"]),
    "mnli": ({"MNLI-m", "MNLI-mm"}, ["contradiction", "entailment", "neutral"]),
    "qnli": ({"QNLI"}, ["entailment", "not_entailment"]),
    "rte": ({"RTE"}, ["entailment", "not_entailment"]),
    "wnli": ({"WNLI"}, ["0", "1"]),
    "ax": ({"AX"}, ["contradiction", "entailment", "neutral"]),
}


@pytest.mark.parametrize("task", sorted(FOLDERS))
def test_test_sets_and_leaderboard_labels(task):
    processor = get_processor(task)
    sets = processor.get_test_sets(os.path.join(GLUE, FOLDERS[task]))
    if task == "stsb":
        assert list(sets) == ["STS-B"] and processor.is_regression
        return
    names, labels = LEADERBOARD[task]
    assert set(sets) == names and not processor.is_regression
    assert processor.leaderboard_labels() == labels
    assert all(e.label == labels[0] for examples in sets.values() for e in examples)


@pytest.mark.parametrize(
    "name,task",
    [("SST-2", "sst2"), ("sts-b", "stsb"), ("STS_B", "stsb"), ("CoLA", "cola"), ("QQP", "qqp"),
     ("mnli-mm", "mnli"), ("AX", "ax"), ("diagnostic", "ax"), ("XNLI", "xnli"), ("rte", "rte")],
)  # fmt: skip
def test_task_name_aliases(name, task):
    assert type(get_processor(name)) is PROCESSORS[task]


def test_xnli_language_and_missing_sets():
    xnli = get_processor("xnli", language="en")
    dev = xnli.get_dev_examples(os.path.join(GLUE, "XNLI"))
    assert _tuples(dev) == [
        ("dev-3", "And he said, Mama, I'm home.", "He didn't say a word.", "contradiction")
    ]
    assert get_processor("xnli").language == "zh"
    with pytest.raises(ValueError, match="XNLI has no test set"):
        xnli.get_test_sets(GLUE)
    with pytest.raises(ValueError, match="no rows for language 'fr'"):
        get_processor("xnli", language="fr").get_dev_examples(os.path.join(GLUE, "XNLI"))
    with pytest.raises(ValueError, match="fine-tune with --task_name=mnli"):
        get_processor("ax").get_train_examples(GLUE)
    with pytest.raises(ValueError, match="no training or dev data"):
        get_processor("ax").get_dev_sets(GLUE)


def _copy(tmp_path, folder):
    target = tmp_path / folder
    shutil.copytree(os.path.join(GLUE, folder), target)
    return target


def _append(path, line):
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def test_short_row_is_an_error_naming_file_and_line(tmp_path):
    data_dir = _copy(tmp_path, "MRPC")
    _append(data_dir / "train.tsv", "1\t11\t12\tonly one sentence")
    with pytest.raises(ValueError) as err:
        get_processor("mrpc").get_train_examples(str(data_dir))
    message = str(err.value)
    assert f"{data_dir / 'train.tsv'}, line 8: expected at least 5 tab-separated columns" in message
    assert "found 4" in message


def test_qqp_skips_short_rows_only(tmp_path):
    data_dir = _copy(tmp_path, "QQP")
    _append(data_dir / "train.tsv", "9\t1\t2\tq1\tq2\tmaybe")
    with pytest.raises(ValueError, match=r"train.tsv, line 7: unknown label 'maybe'; qqp labels"):
        get_processor("qqp").get_train_examples(str(data_dir))


@pytest.mark.parametrize(
    "task,folder,file_name,line,pattern",
    [
        ("cola", "CoLA", "train.tsv", "xx\t2\t\tBad label.", r"line 7: unknown label '2'"),
        ("rte", "RTE", "dev.tsv", "1\ta\tb\tentails", r"line 3: unknown label 'entails'"),
        ("stsb", "STS-B", "dev.tsv", "1\tg\tf\ty\to\ts\ts\ta\tb\tfive",
         r"line 3: the STS-B score must be a number, got 'five'"),
        ("mnli", "MNLI", "dev_matched.tsv", "9\t1\t2\tfiction\tp\tp\tp\tp\ta\tb\tneutral\tmaybe",
         r"line 5: unknown label 'maybe'"),
    ],
)  # fmt: skip
def test_unknown_labels(tmp_path, task, folder, file_name, line, pattern):
    data_dir = _copy(tmp_path, folder)
    _append(data_dir / file_name, line)
    split = "dev" if file_name.startswith("dev") else "train"
    with pytest.raises(ValueError, match=pattern):
        getattr(get_processor(task), f"get_{split}_examples")(str(data_dir))


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ValueError, match=r"Data file not found: .*train.tsv"):
        get_processor("sst2").get_train_examples(str(tmp_path))
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"train.tsv holds no examples"):
        get_processor("sst2").get_train_examples(str(tmp_path))
    (tmp_path / "dev_matched.tsv").write_bytes(b"index\n\xff\xfe\n")
    with pytest.raises(ValueError, match=r"dev_matched.tsv: not UTF-8"):
        get_processor("mnli").get_dev_examples(str(tmp_path))


class _PortedMrpcProcessor(DataProcessor):
    """MRPC as a user's processor written for the original run_classifier.py reads it, through
    the original's `_read_tsv` helper."""

    def get_train_examples(self, data_dir):
        lines = self._read_tsv(os.path.join(data_dir, "train.tsv"))
        return [
            InputExample(f"train-{i}", line[3], line[4], line[0])
            for i, line in enumerate(lines)
            if i > 0
        ]

    def get_labels(self):
        return ["0", "1"]


def test_processors_written_for_the_original_keep_working():
    data_dir = os.path.join(GLUE, "MRPC")
    ported = _PortedMrpcProcessor().get_train_examples(data_dir)
    assert _tuples(ported) == _tuples(get_processor("mrpc").get_train_examples(data_dir))
    # Quotes stay in the text: no quote character, as the original reads TSV files.
    assert any('"' in e.text_a or '"' in (e.text_b or "") for e in ported)


def test_unlabelled_file_in_the_test_layout(tmp_path):
    """get_unlabelled_examples reads any file laid out as the task's test file: the same texts
    as get_test_examples over that file as test.tsv."""
    write_sst2(tmp_path / "sst2", num_train=4, num_dev=2, num_test=6)
    shutil.copy(tmp_path / "sst2" / "test.tsv", tmp_path / "unlabelled.tsv")
    processor = get_processor("SST-2")
    read = processor.get_unlabelled_examples(str(tmp_path / "unlabelled.tsv"))
    test = processor.get_test_examples(str(tmp_path / "sst2"))
    assert [e.text_a for e in read] == [e.text_a for e in test] and len(read) == 6
    assert [e.label for e in read] == [e.label for e in test]
    with pytest.raises(NotImplementedError):
        get_processor("XNLI").get_unlabelled_examples(str(tmp_path / "unlabelled.tsv"))
