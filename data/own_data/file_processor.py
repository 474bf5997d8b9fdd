"""A classification task from the user's own files: no code, the columns named by flags.

`FileProcessor` is a `DataProcessor` (what run_classifier reads GLUE through) over a train, dev
and test file in CSV, TSV or JSON Lines (`data.own_data.table_reader`), named by
`--train_file` / `--dev_file` / `--test_file` or found in `--data_dir` as `train.csv`,
`dev.tsv`, `test.jsonl` and so on. Its columns:

* `--text_a_column` (default, with a header: `text_a`, `text`, `sentence` or `sentence1`);
* `--text_b_column` for sentence pairs (default: `text_b` or `sentence2` where present);
* `--label_column` (default: `label` or `labels`), or `--label_columns`: one 0/1 column per
  label (multi-label, the columns' names being the labels).

A column is a header name or a position from 0. Without a header row, name the columns by
position. The labels are `--labels` / `--label_file` when given (in that order), else found
in the training file (`data.own_data.labels.sorted_labels`), else an earlier run's labels.txt.

Problem types (`--problem_type`): `single_label` (one class per example, softmax),
`multi_label` (any number, a cell such as `4,27` split at `--label_delimiter`, a JSON list, or
0/1 columns; sigmoid), `regression` (a number). `auto`: multi-label for `--label_columns` or
JSON lists, else single-label.
"""

import dataclasses
import os

from absl import logging

from data import label_file
from data.glue.processor_base import DataProcessor, InputExample
from data.own_data import labels as label_lists
from data.own_data.columns import Columns, is_position
from data.own_data.table_reader import read_table
from fileio.reading import is_file

PROBLEM_TYPES = ("auto", "single_label", "multi_label", "regression")
SPLITS = ("train", "dev", "test")


@dataclasses.dataclass
class OwnDataFiles:
    """The own-data flags of run_classifier.py (the flags of the same names)."""

    data_dir: str | None = None
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    file_format: str = "auto"
    encoding: str = "utf-8"
    text_a_column: str | None = None
    text_b_column: str | None = None
    label_column: str | None = None
    label_columns: str | None = None
    label_delimiter: str = ","
    problem_type: str = "auto"
    labels: str | None = None
    label_file: str | None = None


def find_split_file(data_dir, split):
    """The one `<split>.csv|tsv|jsonl|json|txt` of `data_dir`, or None if there is none.

    Raises:
        ValueError: several candidates (naming them and the flag that picks one).
    """
    if not data_dir:
        return None
    names = [f"{split}{ending}" for ending in (".csv", ".tsv", ".jsonl", ".json", ".txt")]
    found = [os.path.join(data_dir, n) for n in names if is_file(os.path.join(data_dir, n))]
    if len(found) > 1:
        raise ValueError(
            f"--data_dir {data_dir} holds several {split} files ({', '.join(found)}): pass "
            f"--{split}_file to choose one."
        )
    return found[0] if found else None


class FileProcessor(DataProcessor):
    """The examples of the user's files (see the module docstring).

    Args:
        files: `OwnDataFiles`.
        task_name: the run's --task_name (a name for logs; None: "own data").
        earlier_runs: folders of earlier runs (the output_dir, the --init_checkpoint's), whose
            labels.txt and problem.json a run that does not train reads, in order, when the
            flags do not give them.

    Raises:
        ValueError: a bad flag value (problem type, label list).
    """

    leaderboard_names = ()

    def __init__(self, files, task_name=None, earlier_runs=()):
        if files.problem_type not in PROBLEM_TYPES:
            raise ValueError(
                f"--problem_type={files.problem_type}: use one of {', '.join(PROBLEM_TYPES)}."
            )
        if files.labels and files.label_file:
            raise ValueError("Pass --labels or --label_file, not both: they both fix the labels.")
        if files.label_column and files.label_columns:
            raise ValueError(
                "Pass --label_column (one cell of labels) or --label_columns (one 0/1 column per "
                "label), not both."
            )
        self.files = files
        self.name = task_name or "own data"
        self.earlier_runs = [p for p in earlier_runs if p]
        self.problem_type = files.problem_type
        if files.label_columns and self.problem_type in ("auto", "single_label"):
            if self.problem_type == "single_label":
                logging.warning("--label_columns holds one column per label: multi-label.")
            self.problem_type = "multi_label"
        self._labels = None
        if files.labels:
            self._labels = label_lists.parse_label_list(files.labels)
        elif files.label_file:
            self._labels = label_lists.read_labels_file(files.label_file)
        self._cache = {}
        self._has_text_b = None

    # -- what the runner reads --------------------------------------------------------------

    @property
    def is_regression(self):
        return self.problem_type == "regression"

    @property
    def is_multi_label(self):
        return self.problem_type == "multi_label"

    @property
    def has_text_b(self):
        """True when the files name a second text column (sentence pairs)."""
        if self._has_text_b is None:
            self._has_text_b = bool(self.files.text_b_column)
        return self._has_text_b

    def split_file(self, split, required=True):
        """The file of `split` ("train", "dev" or "test"): its flag, else found in --data_dir.

        Raises:
            ValueError: none found (when `required`), naming the flags.
        """
        path = getattr(self.files, f"{split}_file") or find_split_file(self.files.data_dir, split)
        if path is None and required:
            where = (
                f"--data_dir {self.files.data_dir} has no {split}.csv, {split}.tsv or "
                if (self.files.data_dir)
                else "no --data_dir either; "
            )
            raise ValueError(
                f"No {split} file: {where}{split}.jsonl; pass --{split}_file=PATH (CSV, TSV or "
                "JSON Lines)."
            )
        return path

    def data_files(self, data_dir, split):
        return [self.split_file(split)]

    def get_labels(self):
        if self._labels is None:
            if self.problem_type == "regression":
                return ["score"]
            self._labels = self._earlier_labels()
        return list(self._labels)

    def get_train_examples(self, data_dir=None):
        return self._examples("train")

    def get_dev_examples(self, data_dir=None):
        return self._examples("dev")

    def get_test_examples(self, data_dir=None):
        return self._examples("test")

    def get_test_sets(self, data_dir=None):
        return {"test": self.get_test_examples(data_dir)}

    def get_unlabelled_examples(self, path):
        """The examples of `path`, read as a test file: the same format and text columns, a
        label column optional and ignored."""
        return self._read_file(path, "test", "unlabelled")

    # -- reading ----------------------------------------------------------------------------

    def _earlier_labels(self):
        for folder in self.earlier_runs:
            path = os.path.join(folder, label_file.LABELS_FILE)
            if is_file(path):
                logging.info("Labels from %s", path)
                return label_lists.read_labels_file(path)
        raise ValueError(
            "No labels for this run: it does not train, and no labels.txt of an earlier run is "
            "in --output_dir or beside --init_checkpoint; pass --labels=a,b,... or "
            "--label_file=labels.txt in the model's class order."
        )

    def _earlier_problem(self):
        """The problem type of the earlier run whose model this run evaluates or predicts with."""
        for folder in self.earlier_runs:
            path = os.path.join(folder, label_lists.PROBLEM_FILE)
            if is_file(path):
                problem_type, _ = label_lists.read_problem_file(path)
                logging.info("--problem_type=%s from %s", problem_type, path)
                return problem_type
        return "single_label"

    def _examples(self, split):
        if split not in self._cache:
            self._cache[split] = self._read(split)
        return self._cache[split]

    def _header_flag(self):
        named = [
            c
            for c in (
                self.files.text_a_column,
                self.files.text_b_column,
                self.files.label_column,
                *(self.files.label_columns or "").split(","),
            )
            if c and c.strip()
        ]
        if not named:
            return None
        return any(not is_position(c) for c in named)

    def _read(self, split):
        return self._read_file(self.split_file(split), split, split)

    def _read_file(self, path, split, guid_prefix):
        table = read_table(path, self.files.file_format, self.files.encoding, self._header_flag())
        if not table.rows:
            self._check_not_empty([], path)
        columns = Columns(table, self.files, need_label=split != "test")
        self._has_text_b = columns.text_b is not None
        if columns.flag_columns:
            columns.name_flag_columns(self._labels)
            if self._labels is None:
                self._labels = list(columns.flag_names)
        if split == "train" and self.problem_type == "auto":
            self.problem_type = "multi_label" if columns.has_list_labels() else "single_label"
        if self.problem_type == "auto":
            self.problem_type = self._earlier_problem()
        examples, empty = [], []
        for index, (line, cells) in enumerate(table.rows):
            text_a = columns.text(cells, columns.text_a, line)
            text_b = (
                columns.text(cells, columns.text_b, line) if columns.text_b is not None else None
            )
            if not text_a.strip():
                empty.append(line)
            label = self._label(columns, cells, line, split)
            examples.append(InputExample(f"{guid_prefix}-{index}", text_a, text_b or None, label))
        if empty:
            logging.warning(
                "%s: %d rows have an empty text (first on line %d); they are kept, read as an "
                "empty input.",
                path,
                len(empty),
                empty[0],
            )
        self._check_not_empty(examples, path)
        if split == "train" and self._labels is None and not self.is_regression:
            found = {x for e in examples for x in (e.label if self.is_multi_label else [e.label])}
            self._labels = label_lists.sorted_labels(found)
            logging.info("Labels found in %s: %s", path, self._labels)
        if split != "test" and not self.is_regression:
            self._check_known(path, table, examples, split)
        return examples

    def _label(self, columns, cells, line, split):
        if split == "test":
            # Test rows need no label; the records carry a placeholder no output reads.
            if self.is_regression:
                return "0"
            return () if self.is_multi_label else self.get_labels()[0]
        if self.files.label_columns:
            return columns.flag_labels(cells, line)
        value = columns.cell(cells, columns.label, line)
        if self.is_multi_label:
            if isinstance(value, list):
                return tuple(str(v).strip() for v in value if str(v).strip())
            parts = str(value).split(self.files.label_delimiter)
            return tuple(p.strip() for p in parts if p.strip())
        if isinstance(value, list):
            raise ValueError(
                f"{columns.path}, line {line}: the label is a list; pass "
                "--problem_type=multi_label for several labels per example."
            )
        label = "" if value is None else str(value).strip()
        if self.is_regression:
            try:
                float(label)
            except ValueError:
                raise ValueError(
                    f"{columns.path}, line {line}: the target must be a number for "
                    f"--problem_type=regression, got {label!r}."
                ) from None
            return label
        if not label:
            raise ValueError(
                f"{columns.path}, line {line}: no label in column {columns.label_name}; fill in "
                "the cell or remove the row."
            )
        return label

    def _check_known(self, path, table, examples, split):
        known = set(self.get_labels())
        for (line, _), example in zip(table.rows, examples, strict=True):
            found = example.label if self.is_multi_label else [example.label]
            for label in found:
                if label not in known:
                    where = "given" if self.files.labels or self.files.label_file else "training"
                    raise ValueError(
                        f"{path}, line {line}: label {label!r} is not among the {where} labels "
                        f"{sorted(known)}: list every label with --labels=... (or "
                        "--label_file) to keep it, or correct the row."
                    )
