"""The GLUE tasks the original lacked, on fixtures in the official file layouts, and bad input.

Expected examples are written out by hand from the fixture files of tests/testdata/glue: the
column positions, header rows and guids of the official GLUE download.
"""

import os
import shutil

import pytest

from data.glue.processors import PROCESSORS, get_processor
from tests.helpers.paths import TESTDATA

GLUE = os.path.join(TESTDATA, "glue")


def _tuples(examples):
    return [(e.guid, e.text_a, e.text_b, e.label) for e in examples]


EXPECTED = {
    ("sst2", "SST-2", "train"): [
        ("train-1", "hide new secretions from the parental units ", None, "0"),
        ("train-2", "contains no wit , only labored gags ", None, "0"),
        ("train-3", "that loves its characters ", None, "1"),
    ],
    ("sst2", "SST-2", "dev"): [
        ("dev-1", "it 's a charming and often affecting journey . ", None, "1"),
    ],
    ("sst2", "SST-2", "test"): [
        ("test-0", "uneasy mishmash of styles and genres .", None, "0"),
        ("test-1", "this film 's relationship to actual tension is the same", None, "0"),
    ],
    ("stsb", "STS-B", "train"): [
        ("train-0", "A plane is taking off.", "An air plane is taking off.", "5.000"),
        ("train-1", "A man is playing a large flute.", "A man is playing a flute.", "3.800"),
    ],
    ("stsb", "STS-B", "test"): [
        ("test-0", "Bombing kills 5 in Iraq.", "Bomb blast kills 3 in Iraq.", "0"),
    ],
    ("qqp", "QQP", "train"): [
        ("train-133273", "How is the life of a math student?",
         "Which level of prepration is enough?", "0"),
        ("train-402555", "How do I control my horny emotions?",
         "How do you control your horniness?", "1"),
        ("train-360472", "What causes stool color to change?",
         "What can cause stool to come out as little balls?", "0"),
    ],
    ("qqp", "QQP", "test"): [
        ("test-0", "Why am I mentally very lonely?",
         "Find the remainder when [math]23^{24}[/math] is divided by 24,23?", "0"),
        ("test-1", "Which one dissolve in water quikly?",
         "Which fish would survive in salt water?", "0"),
    ],
    ("qnli", "QNLI", "dev"): [
        ("dev-0", "What came into force after the new constitution?",
         "As of that day, the new constitution came into force.", "entailment"),
    ],
    ("qnli", "QNLI", "test"): [
        ("test-0", "What organization is devoted to Jihad?",
         "For some decades prior to the First Palestine Intifada there was activity.",
         "entailment"),
    ],
    ("rte", "RTE", "train"): [
        ("train-0", "No Weapons of Mass Destruction Found in Iraq Yet.",
         "Weapons of Mass Destruction Found in Iraq.", "not_entailment"),
        ("train-1",
         "A place of sorrow, after Pope John Paul II died, became a place of celebration.",
         "Pope Benedict XVI is the new leader.", "entailment"),
    ],
    ("wnli", "WNLI", "dev"): [
        ("dev-0", "The drain is clogged with hair. It has to be cleaned.",
         "The hair has to be cleaned.", "0"),
    ],
    ("wnli", "WNLI", "test"): [
        ("test-0", "Maude and Dora had seen the trains rushing across the prairie.",
         "Horses ran away when the trains came.", "0"),
    ],
    ("ax", "diagnostic", "test"): [
        ("test-0", "The cat sat on the mat.", "The cat did not sit on the mat.", "contradiction"),
        ("test-1", "The cat did not sit on the mat.", "The cat sat on the mat.", "contradiction"),
    ],
}  # fmt: skip


@pytest.mark.parametrize("task,folder,set_name", sorted(EXPECTED))
def test_glue_examples(task, folder, set_name):
    processor = get_processor(task)
    examples = getattr(processor, f"get_{set_name}_examples")(os.path.join(GLUE, folder))
    assert _tuples(examples) == EXPECTED[task, folder, set_name]


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
FOLDERS = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "qqp": "QQP", "mnli": "MNLI",
           "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI", "ax": "diagnostic", "stsb": "STS-B"}  # fmt: skip


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
