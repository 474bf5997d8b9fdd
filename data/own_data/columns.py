"""The columns of a user's data file: which cell is text_a, text_b and the label(s), by header
name or position, with the defaults a header row allows (see `data.own_data.file_processor`)."""

# Default column names, in order of preference, where a file has a header.
DEFAULT_COLUMNS = {
    "text_a": ("text_a", "text", "sentence", "sentence1"),
    "text_b": ("text_b", "sentence2"),
    "label": ("label", "labels"),
}
# The cells of a --label_columns column that mean "has the label" and "has not".
_TRUE = {"1", "1.0", "true", "yes", "y"}
_FALSE = {"", "0", "0.0", "false", "no", "n"}


def is_position(column):
    """True for a column flag that is a position from 0 rather than a header name."""
    return str(column).strip().isdigit()


class Columns:
    """Where text_a, text_b and the label(s) are in one table's rows, and their cells.

    Args:
        table: a `data.own_data.table_reader.Table`.
        files: the `OwnDataFiles` flags (the column flags).
        need_label: the split's labels are read (train and dev; a test file's are not).

    Raises:
        ValueError: a column the table does not have, naming the flag, file and header.
    """

    def __init__(self, table, files, need_label):
        self.table, self.path = table, table.path
        self.text_a = self._find(files.text_a_column, "text_a", "--text_a_column")
        self.text_b = None
        if files.text_b_column or table.header:
            self.text_b = self._find(files.text_b_column, "text_b", "--text_b_column", False)
        self.label = None
        self.flag_columns = []
        if files.label_columns and need_label:
            names = [c.strip() for c in files.label_columns.split(",") if c.strip()]
            self.flag_columns = [self._find(c, None, "--label_columns") for c in names]
        elif need_label:
            # A test file's labels are never read: it may have the column or not.
            self.label = self._find(files.label_column, "label", "--label_column")
        self.label_name = self._name(self.label)
        used = [
            c for c in (self.text_a, self.text_b, self.label, *self.flag_columns) if c is not None
        ]
        self.needed = 1 + max((c for c in used if isinstance(c, int)), default=-1)

    def _name(self, column):
        return repr(column) if isinstance(column, str) else f"{column}"

    def _find(self, column, default, flag, required=True):
        header, table = self.table.header, self.table
        if column is None or not str(column).strip():
            if header is None:
                if not required:
                    return None
                raise ValueError(
                    f"{self.path} has no header row naming its columns: pass {flag} (a position "
                    "from 0), e.g. --text_a_column=0 --label_column=1, or add a header row "
                    "such as text,label."
                )
            lowered = {str(name).lower(): name for name in header}
            for name in DEFAULT_COLUMNS[default]:
                if name in lowered:
                    return self._resolved(lowered[name])
            if not required:
                return None
            raise ValueError(
                f"{self.path}: no column named {' or '.join(DEFAULT_COLUMNS[default])} in its "
                f"header {header}; pass {flag}=NAME (or a position from 0)."
            )
        column = str(column).strip()
        if is_position(column):
            if table.file_format == "jsonl":
                raise ValueError(
                    f"{flag}={column}: JSON Lines fields have names, not positions; pass the "
                    f"field's name (the first row of {self.path} has {header})."
                )
            return int(column)
        if header is None:
            raise ValueError(
                f"{flag}={column} names a column, but {self.path} has no header row: pass a "
                "position from 0, or add a header row."
            )
        if column in header:
            return self._resolved(column)
        lowered = {str(name).lower(): name for name in header}
        if column.lower() in lowered:
            return self._resolved(lowered[column.lower()])
        raise ValueError(
            f"{flag}={column}: {self.path} has no such column; its header is {header}."
        )

    def _resolved(self, name):
        # CSV / TSV cells are lists: a header name becomes its position.
        return name if self.table.file_format == "jsonl" else self.table.header.index(name)

    def cell(self, cells, column, line):
        if isinstance(cells, dict):
            if column not in cells:
                raise ValueError(
                    f"{self.path}, line {line}: no field {column!r}; every row needs the "
                    "fields the flags name."
                )
            return cells[column]
        if len(cells) < self.needed:
            what = "comma" if self.table.file_format == "csv" else "tab"
            raise ValueError(
                f"{self.path}, line {line}: expected at least {self.needed} {what}-separated "
                f"columns, found {len(cells)}; fix the row (or pass --file_format if the file "
                "is not what its name says)."
            )
        return cells[column]

    def text(self, cells, column, line):
        value = self.cell(cells, column, line)
        if value is None:
            return ""
        if not isinstance(value, str):
            if isinstance(value, (list, dict)):
                raise ValueError(
                    f"{self.path}, line {line}: the text field {column!r} holds "
                    f"{type(value).__name__}, not text."
                )
            value = str(value)
        return value

    def has_list_labels(self):
        if self.flag_columns:
            return True
        return any(
            isinstance(cells, dict) and isinstance(cells.get(self.label), list)
            for _, cells in self.table.rows
        )

    def name_flag_columns(self, labels):
        """The label of each --label_columns column: `labels` (given, in column order) or the
        columns' header names."""
        if labels is not None:
            if len(labels) != len(self.flag_columns):
                raise ValueError(
                    f"--label_columns names {len(self.flag_columns)} columns but the labels are "
                    f"{labels}: give one label per column, in the same order."
                )
            self.flag_names = list(labels)
            return
        if self.table.header is None:
            raise ValueError(
                f"{self.path} has no header row to name the --label_columns columns: pass "
                "--labels with one name per column, in the same order."
            )
        self.flag_names = [
            self.table.header[c] if isinstance(c, int) else c for c in self.flag_columns
        ]

    def flag_labels(self, cells, line):
        names = []
        for column, name in zip(self.flag_columns, self.flag_names, strict=True):
            value = str(self.cell(cells, column, line)).strip().lower()
            if value in _TRUE:
                names.append(name)
            elif value not in _FALSE:
                raise ValueError(
                    f"{self.path}, line {line}: column {name!r} holds {value!r}; "
                    "--label_columns cells are 0 or 1."
                )
        return tuple(names)
