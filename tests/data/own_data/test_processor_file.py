"""Processor files written for the original run_classifier.py, loaded by `--processor`.

Two files in the original's style (one importing `run_classifier` and `tokenization`, one
`from bert import run_classifier, tokenization` and a sibling module) run here unchanged and in
a child process under Google's own code (the installed `bert` package): the examples, features
and logged lines of every set must be the same.
"""

import json
import logging
import os
import subprocess
import sys
import textwrap
import types

import bert
import pytest

from data.glue.features import convert_examples_to_features
from data.glue.processor_base import DataProcessor, InputExample, PaddingInputExample
from data.own_data.original_api import UserProcessor, original_modules
from data.own_data.processor_file import load_processor
from data.tokenization import full_tokenizer
from data.tokenization.full_tokenizer import FullTokenizer
from tests.helpers.paths import REPO, TESTDATA
from tests.oracles import run_oracle

VOCAB = os.path.join(TESTDATA, "glue", "vocab.txt")
# 10 truncates the longer texts and pairs; 32 pads all of them.
LENGTHS = (10, 32)
SETS = ("train", "dev", "test")

# As in the original's users' files: `label<TAB>text` with a header, test rows `id<TAB>text`
# with a placeholder label; quotes are text (quotechar=None).
SINGLE_PROCESSOR = """
import os
import run_classifier
import tokenization


class MyProcessor(run_classifier.DataProcessor):
    def get_train_examples(self, data_dir):
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "train.tsv")), "train")

    def get_dev_examples(self, data_dir):
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "dev.tsv")), "dev")

    def get_test_examples(self, data_dir):
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "test.tsv")), "test")

    def get_labels(self):
        return ["pos", "neg"]

    def _create_examples(self, lines, set_type):
        examples = []
        for (i, line) in enumerate(lines):
            if i == 0:
                continue
            guid = "%s-%s" % (set_type, i)
            text_a = tokenization.convert_to_unicode(line[1])
            if set_type == "test":
                label = "pos"
            else:
                label = tokenization.convert_to_unicode(line[0])
            examples.append(
                run_classifier.InputExample(guid=guid, text_a=text_a, text_b=None, label=label))
        return examples
"""

# Pairs with quoted cells (a tab inside quotes), read by a classmethod; labels from a sibling
# module; a second class derived from the first.
PAIR_PROCESSOR = """
import os

from bert import run_classifier, tokenization
from pair_labels import LABELS


class PairProcessor(run_classifier.DataProcessor):
    def get_train_examples(self, data_dir):
        return self._create_examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
        return self._create_examples(data_dir, "dev")

    def get_test_examples(self, data_dir):
        return self._create_examples(data_dir, "test")

    def get_labels(self):
        return list(LABELS)

    @classmethod
    def _lines(cls, data_dir, set_type):
        return cls._read_tsv(os.path.join(data_dir, set_type + ".tsv"), quotechar='"')

    def _create_examples(self, data_dir, set_type):
        examples = []
        for line in self._lines(data_dir, set_type):
            guid = "%s-%s" % (set_type, tokenization.convert_to_unicode(line[0]))
            examples.append(run_classifier.InputExample(
                guid, tokenization.convert_to_unicode(line[2]),
                tokenization.convert_to_unicode(line[3]), line[1]))
        return examples


class SwappedPairProcessor(PairProcessor):
    def _create_examples(self, data_dir, set_type):
        examples = super()._create_examples(data_dir, set_type)
        return [run_classifier.InputExample(e.guid, e.text_b, e.text_a, e.label)
                for e in examples]
"""

SINGLE_DATA = {
    "train": [
        ("label", "text"),
        ("pos", "the dog barked"),
        ("neg", 'the committee said "nothing" about the report results'),
        ("pos", "Naïve café friends drank in the pub"),
        ("neg", "他 说 中 文"),
    ],
    "dev": [("label", "text"), ("neg", "the car"), ("pos", "everyone really likes the bridge")],
    "test": [("id", "text"), ("0", "the market is strong"), ("1", "water levels rose fast")],
}
PAIR_DATA = {
    "train": [
        ("a1", "yes", "the dog barked", "the dog"),
        ("a2", "no", '"the car\tits way"', "down the road"),
        ("a3", "maybe", "several engineers warned", "winter storms could delay work"),
    ],
    "dev": [("d1", "no", "the pub", "the river"), ("d2", "yes", "shares rose", "")],
    "test": [("t1", "yes", "the new bridge", "over the river")],
}


def _write_tsv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.writelines("\t".join(row) + "\n" for row in rows)


def _write_task(folder, files, data):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    for set_name, rows in data.items():
        _write_tsv(folder / f"{set_name}.tsv", rows)
    return folder


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """{task: (processor spec, data_dir)} of the two processor files."""
    root = tmp_path_factory.mktemp("processor_files")
    single = _write_task(root / "single", {"my_processors.py": SINGLE_PROCESSOR}, SINGLE_DATA)
    pairs = _write_task(
        root / "pairs",
        {"pair_processors.py": PAIR_PROCESSOR, "pair_labels.py": 'LABELS = ["yes", "no", "maybe"]'},
        PAIR_DATA,
    )
    return {
        "single": (f"{single / 'my_processors.py'}:MyProcessor", str(single)),
        "pairs": (f"{pairs / 'pair_processors.py'}:PairProcessor", str(pairs)),
    }


@pytest.fixture(scope="module")
def original(tasks, tmp_path_factory):
    out = tmp_path_factory.mktemp("original_processor_files")
    run_oracle(
        "original_classifier_data",
        ["--tasks", ",".join(f"{t}={d}" for t, (_, d) in tasks.items()),
         "--processor_files", ",".join(f"{t}={spec}" for t, (spec, _) in tasks.items()),
         "--vocab_file", VOCAB, "--out_dir", out,
         "--max_seq_lengths", ",".join(map(str, LENGTHS))],
    )  # fmt: skip
    with open(out / "result.json", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(VOCAB, do_lower_case=True)


def _read(processor, data_dir, set_name):
    """A set as the runner reads it: train examples, the dev and the test sets."""
    if set_name == "train":
        return processor.get_train_examples(data_dir)
    if set_name == "dev":
        return processor.get_dev_sets(data_dir)["dev"]
    return processor.get_test_sets(data_dir)["test"]


@pytest.mark.parametrize("task", ["single", "pairs"])
@pytest.mark.parametrize("set_name", SETS)
def test_examples_match_original(tasks, original, task, set_name):
    spec, data_dir = tasks[task]
    examples = _read(load_processor(spec), data_dir, set_name)
    rows = [[e.guid, e.text_a, e.text_b, e.label] for e in examples]
    assert rows == original[task][set_name]["examples"]


@pytest.mark.parametrize("task", ["single", "pairs"])
@pytest.mark.parametrize("set_name", SETS)
@pytest.mark.parametrize("length", LENGTHS)
def test_features_match_original(tasks, original, tokenizer, caplog, task, set_name, length):
    spec, data_dir = tasks[task]
    processor = load_processor(spec)
    examples = _read(processor, data_dir, set_name)
    with caplog.at_level(logging.INFO, logger="absl"):
        features = convert_examples_to_features(examples, processor.get_labels(), length, tokenizer)
    rows = [
        [f.input_ids, f.input_mask, f.segment_ids, f.label_id, f.is_real_example] for f in features
    ]
    reference = original[task][set_name]
    assert rows == reference["features"][str(length)]
    assert [r.getMessage() for r in caplog.records if r.name == "absl"] == (
        reference["logs"][str(length)]
    )


def test_fixtures_exercise_truncation_padding_pairs_and_quotes(tasks, original):
    rows = [r for t in tasks for s in SETS for r in original[t][s]["features"]["10"]]
    assert any(0 not in r[1] for r in rows) and any(0 in r[1] for r in rows)
    assert any(1 in r[2] for r in original["pairs"]["train"]["features"]["10"])
    assert {r[3] for r in original["pairs"]["train"]["features"]["32"]} == {0, 1, 2}
    texts = [e[1] for s in SETS for e in original["pairs"][s]["examples"]]
    assert "the car\tits way" in texts  # a quoted cell, read with quotechar='"'
    texts = [e[1] for e in original["single"]["train"]["examples"]]
    assert 'the committee said "nothing" about the report results' in texts


def test_the_processor_has_the_runners_defaults(tasks):
    spec, data_dir = tasks["single"]
    processor = load_processor(spec)
    assert isinstance(processor, UserProcessor) and isinstance(processor, DataProcessor)
    assert processor.name == "MyProcessor"
    assert processor.source_file == spec.rsplit(":", 1)[0]
    assert processor.is_regression is False
    assert processor.leaderboard_names == ()
    assert processor.data_files(data_dir, "train") == []
    assert processor.get_labels() == ["pos", "neg"]
    assert list(processor.get_dev_sets(data_dir)) == ["dev"]
    assert list(processor.get_test_sets(data_dir)) == ["test"]
    assert processor.has_text_b is False  # single texts only, after reading every set
    pairs = load_processor(tasks["pairs"][0])
    assert pairs.has_text_b is False  # nothing read yet
    pairs.get_dev_examples(tasks["pairs"][1])
    assert pairs.has_text_b is True


def test_a_file_with_one_processor_needs_no_class_name(tasks):
    spec, data_dir = tasks["single"]
    processor = load_processor(spec.rsplit(":", 1)[0])
    assert type(processor).__name__ == "MyProcessor"
    assert len(processor.get_train_examples(data_dir)) == 4


def test_a_relative_path_starts_at_the_working_directory(tasks, monkeypatch):
    spec, data_dir = tasks["pairs"]
    monkeypatch.chdir(os.path.dirname(data_dir))
    processor = load_processor("pairs/pair_processors.py:SwappedPairProcessor")
    assert processor.source_file == spec.rsplit(":", 1)[0]
    assert processor.get_test_examples(data_dir)[0].text_a == "over the river"


def test_sys_modules_and_path_are_restored(tasks, monkeypatch):
    # Google's bert.tokenization would load TensorFlow and define absl flags here: a stand-in
    # object shows that a submodule loaded before comes back, as does a module `run_classifier`.
    loaded = {name: types.ModuleType(name) for name in ("bert.tokenization", "run_classifier")}
    for name, module in loaded.items():
        monkeypatch.setitem(sys.modules, name, module)
    modules, path = dict(sys.modules), list(sys.path)
    for spec, _ in tasks.values():
        load_processor(spec)
    assert sys.modules == modules  # the same objects under the same names, nothing added
    assert sys.modules["bert"] is bert and bert.__file__.endswith(
        os.path.join("bert", "__init__.py")
    )
    for name, module in loaded.items():
        assert sys.modules[name] is module
    assert "tokenization" not in sys.modules and "pair_labels" not in sys.modules
    assert sys.path == path


def test_sibling_modules_of_two_files_do_not_mix(tmp_path):
    specs = []
    for name in ("first", "second"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "labels_of.py").write_text(f"LABELS = [{name!r}]\n", encoding="utf-8")
        (folder / "task.py").write_text(
            "import run_classifier\nfrom labels_of import LABELS\n\n"
            "class Task(run_classifier.DataProcessor):\n"
            "    def get_labels(self):\n        return LABELS\n",
            encoding="utf-8",
        )
        specs.append(f"{folder / 'task.py'}:Task")
    assert [load_processor(spec).get_labels() for spec in specs] == [["first"], ["second"]]


def test_the_original_names_are_this_projects():
    modules = original_modules()
    assert modules["bert.run_classifier"] is modules["run_classifier"]
    assert modules["bert"].tokenization is modules["tokenization"]
    assert modules["run_classifier"].DataProcessor is UserProcessor
    assert modules["run_classifier"].InputExample is InputExample
    assert modules["run_classifier"].PaddingInputExample is PaddingInputExample
    tokenization = modules["tokenization"]
    for name in (
        "FullTokenizer",
        "BasicTokenizer",
        "WordpieceTokenizer",
        "load_vocab",
        "whitespace_tokenize",
        "printable_text",
        "validate_case_matches_checkpoint",
    ):
        assert getattr(tokenization, name) is getattr(full_tokenizer, name)
    assert tokenization.convert_to_unicode(b"caf\xc3\xa9\xff!") == "café!"  # bad bytes dropped
    text = "naïve"
    assert tokenization.convert_to_unicode(text) is text
    with pytest.raises(ValueError, match="Unsupported string type"):
        tokenization.convert_to_unicode(5)


def test_the_originals_other_imports_load_unused(tmp_path, monkeypatch):
    # The header of the original's run_classifier.py, as files copied from it begin.
    path = tmp_path / "copied.py"
    path.write_text(
        "import modeling\nimport optimization\nimport tokenization\n"
        "from bert import modeling as bert_modeling\nimport run_classifier\n\n"
        "class Copied(run_classifier.DataProcessor):\n    pass\n",
        encoding="utf-8",
    )
    monkeypatch.delitem(sys.modules, "modeling", raising=False)
    assert load_processor(str(path)).name == "Copied"
    assert "modeling" not in sys.modules  # not this project's modeling package either


def _file(tmp_path, text, name="proc.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def _refused(spec, *parts):
    modules = dict(sys.modules)
    with pytest.raises(ValueError) as info:
        load_processor(spec)
    message = str(info.value)
    assert sys.modules == modules
    assert "\n" not in message and message.startswith(f"--processor={spec}")
    for part in parts:
        assert part in message
    return message


@pytest.mark.parametrize("spec", ["MyProcessor", ":MyProcessor", "my_processors:MyProcessor", ""])
def test_a_value_without_a_python_file_is_refused(spec):
    _refused(spec, "names no Python file", "path/to/file.py:ClassName")


def test_a_missing_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _refused("absent.py:MyProcessor", str(tmp_path / "absent.py"), "not found", str(tmp_path))


@pytest.mark.parametrize(
    "text,line,error",
    [
        ("import run_classifier\n\nbase = run_classifier.ColaProcessor\n", 3, "AttributeError"),
        ("import os\nimport my_helpers\n", 2, "ModuleNotFoundError (No module named 'my_helpers')"),
        ("from bert import run_squad\n", 1, "ImportError (cannot import name 'run_squad'"),
        (
            "import modeling\n\nconfig = modeling.BertConfig\n",
            3,
            "AttributeError (modeling.BertConfig is not available to processor files",
        ),
        ("import tokenization\nx = 1\nx = 1 / 0\n", 3, "ZeroDivisionError (division by zero)"),
        ("class A(:\n    pass\n", 1, "SyntaxError"),
        ("import sys\nsys.exit(2)\n", 2, "SystemExit (2)"),
    ],
)
def test_a_file_that_fails_to_load_is_refused_with_its_line(tmp_path, text, line, error):
    path = _file(tmp_path, text)
    _refused(f"{path}:MyProcessor", f"loading {path} raised {error}", f"{path}, line {line}")


def test_an_error_in_a_sibling_module_names_the_users_line(tmp_path):
    _file(tmp_path, "import tokenization\n\nLABELS = tokenization.missing_name\n", "helper.py")
    path = _file(tmp_path, "import os\nimport helper\n")
    message = _refused(f"{path}:P", "AttributeError (tokenization.missing_name is not available")
    assert f"{path}, line 2" in message


FILE_WITH_TWO = """
    import run_classifier
    from run_classifier import DataProcessor


    class Base(run_classifier.DataProcessor):
        def get_labels(self):
            return ["0", "1"]


    class Mine(Base):
        pass


    class NotAProcessor:
        pass


    class NeedsArguments(Base):
        def __init__(self, language):
            self.language = language
"""


def test_a_missing_class_is_refused_with_the_files_processors(tmp_path):
    path = _file(tmp_path, FILE_WITH_TWO)
    _refused(f"{path}:Theirs", f"{path} has no class Theirs", "Base, Mine, NeedsArguments")


def test_a_class_that_is_no_processor_is_refused(tmp_path):
    path = _file(tmp_path, FILE_WITH_TWO)
    _refused(f"{path}:NotAProcessor", "NotAProcessor in", "is not a DataProcessor subclass")
    _refused(f"{path}:run_classifier", "is not a DataProcessor subclass")
    _refused(f"{path}:DataProcessor", "is the base class itself", "Base, Mine, NeedsArguments")


def test_several_processors_without_a_class_name_are_refused(tmp_path):
    path = _file(tmp_path, FILE_WITH_TWO)
    _refused(path, "several DataProcessor subclasses (Base, Mine, NeedsArguments)", f"{path}:")


def test_a_file_without_processors_is_refused(tmp_path):
    path = _file(tmp_path, "import run_classifier\n")
    _refused(path, "defines no DataProcessor subclass", "run_classifier.DataProcessor")
    _refused(f"{path}:Mine", "has no class Mine (it defines none)")


def test_a_processor_that_needs_arguments_is_refused(tmp_path):
    path = _file(tmp_path, FILE_WITH_TWO)
    _refused(f"{path}:NeedsArguments", "NeedsArguments() raised TypeError", "without arguments")


def test_missing_readers_and_data_files_are_named(tmp_path):
    path = _file(tmp_path, FILE_WITH_TWO)
    processor = load_processor(f"{path}:Mine")
    for call, flag in [
        (processor.get_train_examples, "--do_train"),
        (processor.get_dev_sets, "--do_eval"),
        (processor.get_test_sets, "--do_predict"),
    ]:
        with pytest.raises(ValueError, match=f"Mine \\({path}\\) has no .*{flag}"):
            call(str(tmp_path))
    unlabeled = _file(
        tmp_path,
        "import run_classifier\nclass P(run_classifier.DataProcessor):\n    pass\n",
        "p.py",
    )
    with pytest.raises(ValueError, match="P .* has no get_labels\\(\\): add it"):
        load_processor(unlabeled).get_labels()
    missing = str(tmp_path / "train.tsv")
    with pytest.raises(ValueError, match=f"Data file not found: {missing}: --data_dir .* Mine"):
        processor._read_tsv(missing)


def test_loading_stays_tensorflow_free(tasks):
    code = (
        "import sys; from data.own_data.processor_file import load_processor; "
        f"load_processor({tasks['single'][0]!r}).get_train_examples({tasks['single'][1]!r}); "
        "print('tensorflow' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
