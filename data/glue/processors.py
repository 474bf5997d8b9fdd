"""Readers for the GLUE and XNLI data files, one processor per task.

The four tasks of the original release (CoLA, MNLI, MRPC, XNLI) read the same files, columns,
header rows and guids as the original `run_classifier.py`; the other GLUE tasks follow the files
of the official GLUE download. Every processor returns lists of `InputExample`; labels stay the
strings found in the files (or a placeholder on test sets, which have none), as in the original.

Bad input is one `ValueError` naming the file and line: a missing file, a row with too few
columns (QQP's few malformed rows are skipped instead, as the GLUE tooling does), an unknown
label, a set with no examples.
"""

import os

from data.glue.processor_base import DataProcessor, InputExample, _TsvProcessor

# The NLI classes in the original's order: class ids 0, 1, 2 of MNLI, XNLI and AX models.
_MNLI_LABELS = ("contradiction", "entailment", "neutral")


class ColaProcessor(_TsvProcessor):
    """CoLA: single sentences, acceptable (1) or not (0); Matthews correlation.

    As the original: only the test file has a header; guids count rows from 0.
    """

    name = "cola"
    leaderboard_names = ("CoLA",)
    header_sets = ("test",)
    columns = (3, None, 1)
    test_columns = (1, None)
    labels = ("0", "1")


class MrpcProcessor(_TsvProcessor):
    """MRPC: sentence pairs, paraphrase (1) or not (0). Header in every file, row-number guids."""

    name = "mrpc"
    leaderboard_names = ("MRPC",)
    columns = (3, 4, 0)
    test_columns = (3, 4)
    labels = ("0", "1")


class MnliProcessor(_TsvProcessor):
    """MultiNLI: premise/hypothesis pairs, 3 classes; dev and test matched and mismatched.

    As the original: `get_dev_examples` is `dev_matched.tsv` (guids `dev_matched-<index>`),
    `get_test_examples` is `test_matched.tsv` (guids `test-<index>`), the label is the last
    column. The mismatched sets come with `get_dev_sets` / `get_test_sets`.
    """

    name = "mnli"
    leaderboard_names = ("MNLI-m", "MNLI-mm")
    files = {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv"}
    extra_files = {"dev": ("dev_mismatched.tsv",), "test": ("test_mismatched.tsv",)}
    set_names = {"train": "train", "dev": "dev_matched", "test": "test"}
    id_column = 0
    test_id_column = 0
    columns = (8, 9, -1)
    test_columns = (8, 9)
    labels = _MNLI_LABELS

    def get_dev_sets(self, data_dir):
        return {
            "dev_matched": self.get_dev_examples(data_dir),
            "dev_mismatched": self._create_examples(
                data_dir, "dev", "dev_mismatched.tsv", "dev_mismatched"
            ),
        }

    def get_test_sets(self, data_dir):
        return {
            "MNLI-m": self.get_test_examples(data_dir),
            "MNLI-mm": self._create_examples(
                data_dir, "test", "test_mismatched.tsv", "test_mismatched"
            ),
        }


class XnliProcessor(DataProcessor):
    """XNLI: machine-translated MultiNLI for training, human-translated dev set; no test set.

    As the original: training rows `premise hypo label` of `multinli/multinli.train.<lang>.tsv`
    (`contradictory` read as `contradiction`); dev rows of `xnli.dev.tsv` for the language only,
    guids counting every row of the file.

    Args:
        language: XNLI language code (the original hard-coded "zh").
    """

    name = "xnli"
    labels = _MNLI_LABELS

    def __init__(self, language="zh"):
        if not language or not isinstance(language, str):
            raise ValueError(
                f"XNLI language must be a language code such as 'zh', got {language!r}."
            )
        self.language = language

    def data_files(self, data_dir, split):
        if split == "test":
            return self.get_test_examples(data_dir)
        if split == "train":
            return [os.path.join(data_dir, "multinli", f"multinli.train.{self.language}.tsv")]
        return [os.path.join(data_dir, "xnli.dev.tsv")]

    def get_train_examples(self, data_dir):
        (path,) = self.data_files(data_dir, "train")
        examples = []
        for i, (line, row) in enumerate(self._read_numbered(path)):
            if i == 0:
                continue
            self._check_columns(path, line, row, 3)
            label = "contradiction" if row[2] == "contradictory" else row[2]
            self._check_label(path, line, label)
            examples.append(InputExample(f"train-{i}", row[0], row[1], label))
        return self._check_not_empty(examples, path)

    def get_dev_examples(self, data_dir):
        (path,) = self.data_files(data_dir, "dev")
        examples = []
        for i, (line, row) in enumerate(self._read_numbered(path)):
            if i == 0:
                continue
            self._check_columns(path, line, row, 8)
            if row[0] != self.language:
                continue
            self._check_label(path, line, row[1])
            examples.append(InputExample(f"dev-{i}", row[6], row[7], row[1]))
        return self._check_not_empty(examples, path, f"rows for language {self.language!r}")

    def get_test_examples(self, data_dir):
        raise ValueError(
            "XNLI has no test set here (as in the original): use --do_train/--do_eval only."
        )

    def get_test_sets(self, data_dir):
        return self.get_test_examples(data_dir)


class Sst2Processor(_TsvProcessor):
    """SST-2: single sentences, positive (1) or negative (0). `sentence label`; test `index
    sentence`."""

    name = "sst2"
    leaderboard_names = ("SST-2",)
    test_id_column = 0
    columns = (0, None, 1)
    test_columns = (1, None)
    labels = ("0", "1")


class StsbProcessor(_TsvProcessor):
    """STS-B: sentence pairs scored 0..5 (regression); Pearson and Spearman correlations.

    Columns 7 and 8 hold the texts, column 9 the score (absent in the test file).
    """

    name = "stsb"
    is_regression = True
    leaderboard_names = ("STS-B",)
    id_column = 0
    test_id_column = 0
    columns = (7, 8, 9)
    test_columns = (7, 8)
    # One output column; the label itself is a number.
    labels = ("score",)

    def _test_label(self):
        return "0"

    def _parse_label(self, path, line, label):
        try:
            float(label)
        except ValueError:
            raise ValueError(
                f"{path}, line {line}: the STS-B score must be a number, got {label!r}."
            ) from None
        return label


class QqpProcessor(_TsvProcessor):
    """QQP: question pairs, duplicate (1) or not (0); F1 and accuracy.

    `id qid1 qid2 question1 question2 is_duplicate`; test `id question1 question2`. Rows with
    too few columns (a few in the official training file) are skipped, as the GLUE tooling does.
    """

    name = "qqp"
    leaderboard_names = ("QQP",)
    id_column = 0
    test_id_column = 0
    columns = (3, 4, 5)
    test_columns = (1, 2)
    skip_short_rows = True
    labels = ("0", "1")


class QnliProcessor(_TsvProcessor):
    """QNLI: question/sentence pairs, `index question sentence label`."""

    name = "qnli"
    leaderboard_names = ("QNLI",)
    id_column = 0
    test_id_column = 0
    labels = ("entailment", "not_entailment")


class RteProcessor(QnliProcessor):
    """RTE: `index sentence1 sentence2 label`, entailment or not_entailment."""

    name = "rte"
    leaderboard_names = ("RTE",)


class WnliProcessor(QnliProcessor):
    """WNLI: `index sentence1 sentence2 label`, labels 0/1."""

    name = "wnli"
    leaderboard_names = ("WNLI",)
    labels = ("0", "1")


class AxProcessor(_TsvProcessor):
    """The GLUE diagnostic set (AX): `diagnostic.tsv`, `index sentence1 sentence2`, test only.

    Predicted with a model fine-tuned on MNLI, hence MNLI's labels in MNLI's order.
    """

    name = "ax"
    leaderboard_names = ("AX",)
    files = {"test": "diagnostic.tsv"}
    id_column = 0
    test_id_column = 0
    labels = _MNLI_LABELS

    def _no_labeled_data(self, *unused):
        raise ValueError(
            "The AX diagnostic set has no training or dev data: fine-tune with --task_name=mnli, "
            "then run --task_name=ax --do_predict with --init_checkpoint set to that model."
        )

    get_train_examples = _no_labeled_data
    get_dev_examples = _no_labeled_data
    get_dev_sets = _no_labeled_data

    def data_files(self, data_dir, split):
        if split != "test":
            self._no_labeled_data()
        return super().data_files(data_dir, split)


PROCESSORS = {
    "cola": ColaProcessor,
    "sst2": Sst2Processor,
    "mrpc": MrpcProcessor,
    "stsb": StsbProcessor,
    "qqp": QqpProcessor,
    "mnli": MnliProcessor,
    "qnli": QnliProcessor,
    "rte": RteProcessor,
    "wnli": WnliProcessor,
    "ax": AxProcessor,
    "xnli": XnliProcessor,
}

# Other spellings in use (GLUE site names, other toolkits), after lower-casing and dropping
# "-" and "_": "SST-2" -> "sst2", "MNLI-mm" -> "mnlimm".
_ALIASES = {
    "mnlim": "mnli",
    "mnlimm": "mnli",
    "mnlimatched": "mnli",
    "mnlimismatched": "mnli",
    "multinli": "mnli",
    "diagnostic": "ax",
    "gluediagnostic": "ax",
}


def is_glue_processor(processor):
    """True for the processor of a GLUE or XNLI task (scored by the official GLUE metrics)."""
    return type(processor) in PROCESSORS.values()


def canonical_task_name(task_name):
    """Returns the `PROCESSORS` key for a task name, or None if there is none.

    Case-insensitive; hyphens, underscores and spaces are ignored ("SST-2", "sts_b"), and a few
    other names are accepted ("MNLI-m", "MNLI-mm" -> "mnli", "diagnostic" -> "ax").
    """
    key = "".join(c for c in str(task_name).lower() if c not in "-_ ")
    key = _ALIASES.get(key, key)
    return key if key in PROCESSORS else None


def get_processor(task_name, **kwargs):
    """Builds the processor of a task.

    Args:
        task_name: a `PROCESSORS` key or alias, any case.
        **kwargs: options of that processor (XNLI: `language`).

    Returns:
        A `DataProcessor`.

    Raises:
        ValueError: for an unknown task (listing the known ones) or an option the task lacks.
    """
    key = canonical_task_name(task_name)
    if key is None:
        raise ValueError(f"Task not found: {task_name}. Known tasks: {sorted(PROCESSORS)}")
    try:
        return PROCESSORS[key](**kwargs)
    except TypeError as err:
        raise ValueError(
            f"Task {key} does not take the options {sorted(kwargs)} ({err})."
        ) from None
