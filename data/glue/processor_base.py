"""The example types and the base processor classes that every task reader builds on.

`DataProcessor` reads one task's files into `InputExample`s and owns the clear errors for bad
files (missing, not UTF-8, too few columns, unknown label, empty); `_TsvProcessor` covers the
common case of a tab-separated file per set with fixed columns, described by class attributes.
"""

import csv
import os

from absl import logging

from fileio.reading import is_file, open_for_reading


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
    return open_for_reading(path)


def _exists(path):
    return is_file(path)


class DataProcessor:
    """Base class: reads one task's files into `InputExample`s.

    Attributes:
        name: the task name used by `get_processor`.
        labels: the label strings, in class-id order.
        is_regression: True when the label is a number (one output, squared-error loss).
        has_text_b: True when examples are sentence pairs.
        leaderboard_names: names of the GLUE leaderboard files this task's test sets produce.
    """

    name = "task"
    labels = ()
    is_regression = False
    has_text_b = True
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

    def get_unlabelled_examples(self, path):
        """Returns the examples of the file `path`, laid out as this task's test file (texts
        only), with placeholder labels: unlabelled text in the task's own format.

        Raises:
            NotImplementedError: the task reads no such file.
        """
        raise NotImplementedError()

    def data_files(self, data_dir, split):
        """The files of `data_dir` that reading `split` ("train", "dev", "test": every set of
        `get_dev_sets` / `get_test_sets` for the last two) opens, so that a runner can name a
        missing one before it starts.

        Raises:
            ValueError: if the task has no such split (as reading it would).
        """
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

    @property
    def has_text_b(self):
        return self.columns[1] is not None

    def get_train_examples(self, data_dir):
        return self._create_examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
        return self._create_examples(data_dir, "dev")

    def get_test_examples(self, data_dir):
        return self._create_examples(data_dir, "test")

    def get_unlabelled_examples(self, path):
        return self._create_examples(
            os.path.dirname(path), "test", os.path.basename(path), "unlabelled"
        )

    # Further files of a split, read by `get_dev_sets` / `get_test_sets` (MNLI's mismatched).
    extra_files = {}

    def data_files(self, data_dir, split):
        names = [self.files[split], *self.extra_files.get(split, ())]
        return [os.path.join(data_dir, name) for name in names]

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
