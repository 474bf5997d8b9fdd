"""Readers for the GLUE and XNLI data files, one processor per task.

The four tasks of the original release (CoLA, MNLI, MRPC, XNLI) read the same files, columns,
header rows and guids as the original `run_classifier.py`; the other GLUE tasks follow the files
of the official GLUE download. Every processor returns lists of `InputExample`; labels stay the
strings found in the files (or a placeholder on test sets, which have none), as in the original.

Bad input is one `ValueError` naming the file and line: a missing file, a row with too few
columns (QQP's few malformed rows are skipped instead, as the GLUE tooling does), an unknown
label, a set with no examples.
"""

import csv
import os

from absl import logging

# The NLI classes in the original's order: class ids 0, 1, 2 of MNLI, XNLI and AX models.
_MNLI_LABELS = ("contradiction", "entailment", "neutral")


class InputExample:
    """One example: a single text or a pair, with its label string.

    Args:
        guid: unique id, e.g. `"train-12"`.
        text_a: the first (or only) text.
        text_b: the second text of a pair, or None.
        label: the label string (a number as text for STS-B); None where unknown.
    """

    def __init__(self, guid, text_a, text_b=None, label=None):
        self.guid = guid
        self.text_a = text_a
        self.text_b = text_b
        self.label = label

    def __repr__(self):
        return (
            f"InputExample(guid={self.guid!r}, text_a={self.text_a!r}, "
            f"text_b={self.text_b!r}, label={self.label!r})"
        )


class PaddingInputExample:
    """A fake example that pads an eval/predict set to a whole number of batches.

    It converts to all-zero features with `is_real_example=False`, so metrics and prediction
    files skip it. Used where every batch must be full (TPUs); a distinct class rather than
    None so that a missing example is never mistaken for padding.
    """


def _open_text(path):
    if "://" in path:
        import tensorflow as tf  # only for remote file systems such as gs://

        return tf.io.gfile.GFile(path, "r")
    return open(path, encoding="utf-8", newline="")


def _exists(path):
    if "://" in path:
        import tensorflow as tf

        return tf.io.gfile.exists(path)
    return os.path.isfile(path)


class DataProcessor:
    """Base class: reads one task's files into `InputExample`s.

    Attributes:
        name: the task name used by `get_processor`.
        labels: the label strings, in class-id order.
        is_regression: True when the label is a number (one output, squared-error loss).
        leaderboard_names: names of the GLUE leaderboard files this task's test sets produce.
    """

    name = "task"
    labels = ()
    is_regression = False
    leaderboard_names = ()

    def get_train_examples(self, data_dir):
        """Returns the training examples of `data_dir`."""
        raise NotImplementedError()

    def get_dev_examples(self, data_dir):
        """Returns the (first) development set of `data_dir`."""
        raise NotImplementedError()

    def get_test_examples(self, data_dir):
        """Returns the (first) test set of `data_dir`, with placeholder labels."""
        raise NotImplementedError()

    def get_labels(self):
        """Returns the label strings (the `labels` attribute); their positions are the class ids."""
        if not self.labels:
            raise NotImplementedError()
        return list(self.labels)

    def get_dev_sets(self, data_dir):
        """Returns every development set, as `{set name: examples}` in evaluation order."""
        return {"dev": self.get_dev_examples(data_dir)}

    def get_test_sets(self, data_dir):
        """Returns every test set, as `{leaderboard name: examples}` (e.g. `{"CoLA": [...]}`).

        Raises:
            ValueError: if the task has no test set.
        """
        if not self.leaderboard_names:
            raise ValueError(f"Task {self.name} has no test set to predict.")
        return {self.leaderboard_names[0]: self.get_test_examples(data_dir)}

    def leaderboard_labels(self):
        """Returns, per class id, the label string the GLUE site expects."""
        return list(self.get_labels())

    @classmethod
    def _read_tsv(cls, input_file, quotechar=None):
        """Reads a tab-separated file into a list of rows (lists of strings).

        As the original: no quote character by default, so quotes stay in the text.
        """
        return [row for _, row in cls._read_numbered(input_file, quotechar)]

    @classmethod
    def _read_numbered(cls, input_file, quotechar=None):
        """Reads a tab-separated file into `(line number, row)` pairs (numbers from 1).

        Raises:
            ValueError: if the file is missing or is not UTF-8.
        """
        if not _exists(input_file):
            raise ValueError(
                f"Data file not found: {input_file}. --data_dir must hold the task's files "
                f"as in the official download ({cls.name})."
            )
        rows = []
        try:
            with _open_text(input_file) as f:
                reader = csv.reader(f, delimiter="\t", quotechar=quotechar)
                for row in reader:
                    rows.append((reader.line_num, row))
        except UnicodeDecodeError as err:
            raise ValueError(f"{input_file}: not UTF-8 text ({err}).") from err
        return rows

    def _check_columns(self, path, line, row, count):
        if len(row) < count:
            raise ValueError(
                f"{path}, line {line}: expected at least {count} tab-separated columns, found "
                f"{len(row)}. Use the official {self.name} files, unmodified."
            )

    def _check_label(self, path, line, label):
        if label not in self.get_labels():
            raise ValueError(
                f"{path}, line {line}: unknown label {label!r}; {self.name} labels are "
                f"{list(self.get_labels())}."
            )

    @staticmethod
    def _check_not_empty(examples, path, what="examples"):
        if not examples:
            raise ValueError(f"{path} holds no {what}; it must have at least one data row.")
        return examples


class _TsvProcessor(DataProcessor):
    """A task whose sets are tab-separated files with fixed columns.

    Attributes:
        files: file name per set (`train`, `dev`, `test`).
        set_names: the set name used in guids, per set.
        header_sets: the sets whose first row is a header.
        id_column: column holding the example id used in guids of the labeled sets; None for
            the row number.
        test_id_column: the same for the test set.
        columns: (text_a, text_b or None, label) columns of the labeled sets.
        test_columns: (text_a, text_b or None) columns of the test set.
        skip_short_rows: skip rows with too few columns instead of failing.
    """

    files = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    set_names = {"train": "train", "dev": "dev", "test": "test"}
    header_sets = ("train", "dev", "test")
    id_column = None
    test_id_column = None
    columns = (1, 2, 3)
    test_columns = (1, 2)
    skip_short_rows = False

    def get_train_examples(self, data_dir):
        return self._create_examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
        return self._create_examples(data_dir, "dev")

    def get_test_examples(self, data_dir):
        return self._create_examples(data_dir, "test")

    def _test_label(self):
        return self.get_labels()[0]

    def _parse_label(self, path, line, label):
        self._check_label(path, line, label)
        return label

    def _create_examples(self, data_dir, split, file_name=None, set_name=None):
        path = os.path.join(data_dir, file_name or self.files[split])
        set_name = set_name or self.set_names[split]
        is_test = split == "test"
        text_a_col, text_b_col, *label_col = self.test_columns if is_test else self.columns
        id_col = self.test_id_column if is_test else self.id_column
        used = (text_a_col, text_b_col, id_col, *label_col)
        needed = 1 + max(c for c in used if c is not None and c >= 0)
        examples = []
        skipped = 0
        for i, (line, row) in enumerate(self._read_numbered(path)):
            if i == 0 and split in self.header_sets:
                continue
            if len(row) < needed:
                if self.skip_short_rows:
                    skipped += 1
                    continue
                self._check_columns(path, line, row, needed)
            key = i if id_col is None else row[id_col]
            if is_test:
                label = self._test_label()
            else:
                label = self._parse_label(path, line, row[label_col[0]])
            text_b = None if text_b_col is None else row[text_b_col]
            examples.append(InputExample(f"{set_name}-{key}", row[text_a_col], text_b, label))
        if skipped:
            logging.warning(
                "%s: skipped %d rows with fewer than %d columns.", path, skipped, needed
            )
        return self._check_not_empty(examples, path)


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

    def get_train_examples(self, data_dir):
        path = os.path.join(data_dir, "multinli", f"multinli.train.{self.language}.tsv")
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
        path = os.path.join(data_dir, "xnli.dev.tsv")
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
