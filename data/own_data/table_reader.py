"""A user's data file as rows of cells: CSV, TSV or JSON Lines, as spreadsheets and scripts
write them.

What users' files hold and how each is read:

* a UTF-8 byte-order mark (Excel's "CSV UTF-8"): dropped;
* Windows line ends: read as line ends, also inside quoted cells;
* CSV and TSV cells quoted with `"` (commas, tabs and newlines inside, `""` for a quote): read
  as one cell without the quotes; an unclosed quote is refused, naming its line;
* bytes that are not text in `--encoding` (Excel's cp1252 exports): refused, naming the line
  and the `--encoding` that reads it;
* JSON Lines: one object per line (blank lines skipped), cells by key; a list is kept as a
  list (a multi-label cell).

Everything here is TensorFlow-free, so a runner reads and checks its files before TensorFlow
loads; remote paths (`gs://` ...) read through `fileio.reading`.
"""

import codecs
import csv
import dataclasses
import io
import json
import os

from fileio import reading

FILE_FORMATS = ("csv", "tsv", "jsonl")
# File name endings and the format they mean for --file_format=auto.
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".txt": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
# Encodings tried, in order, to name the one that reads a file that is not in --encoding.
_LIKELY_ENCODINGS = ("utf-8", "cp1252", "latin-1")


@dataclasses.dataclass
class Table:
    """The rows of one file.

    Attributes:
        path: the file.
        header: the column names (CSV / TSV with a header row; JSON Lines: the keys of the first
            object), or None.
        rows: `(line number, cells)` per data row, numbered from 1 as an editor shows them (the
            first line of a row that spans several); cells are a list (CSV / TSV) or a dict
            (JSON Lines).
        file_format: "csv", "tsv" or "jsonl".
    """

    path: str
    header: list | None
    rows: list
    file_format: str


def file_format_of(path, file_format="auto"):
    """The format of `path`: `file_format` unless "auto", else from the name's ending.

    Raises:
        ValueError: an ending that names no format (with the flag that fixes it).
    """
    if file_format != "auto":
        return file_format
    ending = os.path.splitext(str(path))[1].lower()
    if ending not in _EXTENSIONS:
        raise ValueError(
            f"{path}: cannot tell the file's format from its name; pass --file_format=csv, "
            "tsv or jsonl."
        )
    return _EXTENSIONS[ending]


def _line_of(data, offset):
    return data.count(b"\n", 0, offset) + 1


def _decode(path, data, encoding):
    """The text of `data`, a byte-order mark dropped; one sentence for bytes that do not decode."""
    codec = codecs.lookup(encoding).name
    if codec == "utf-8":
        codec = "utf-8-sig"
    try:
        return data.decode(codec)
    except UnicodeDecodeError as err:
        line = _line_of(data, err.start)
        readers = [
            e for e in _LIKELY_ENCODINGS if codecs.lookup(e).name != codecs.lookup(codec).name
        ]
        fits = next((e for e in readers if _decodes(data, e)), "latin-1")
        raise ValueError(
            f"{path}, line {line}: byte 0x{data[err.start]:02x} is not {encoding} text; the file "
            f"was probably saved in another encoding (Excel saves cp1252): pass "
            f"--encoding={fits}, or save it as UTF-8."
        ) from None


def _decodes(data, encoding):
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _delimited_rows(path, text, delimiter):
    """`(first line, cells)` per row of a CSV or TSV text, blank lines skipped."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows = []
    last_line = 0
    try:
        for cells in reader:
            first, last_line = last_line + 1, reader.line_num
            if cells and any(cell.strip() for cell in cells):
                rows.append((first, cells))
    except csv.Error as err:
        raise ValueError(
            f"{path}, line {last_line + 1}: {err}; a cell that starts with a quote must end "
            'with one, and a quote inside a quoted cell is written twice ("").'
        ) from None
    return rows


def _json_rows(path, text):
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cells = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{path}, line {number}: not a JSON object ({err.msg}); a JSON Lines file has "
                'one object per line, such as {"text": "...", "label": "..."}.'
            ) from None
        if not isinstance(cells, dict):
            raise ValueError(
                f"{path}, line {number}: a JSON Lines row must be an object with named fields, "
                f"got {type(cells).__name__}."
            )
        rows.append((number, cells))
    return rows


def read_table(path, file_format="auto", encoding="utf-8", header=None):
    """Reads `path` into a `Table`.

    Args:
        path: the file (local or any file system TensorFlow knows).
        file_format: one of `FILE_FORMATS`, or "auto" (from the name's ending).
        encoding: the file's text encoding (--encoding); UTF-8's byte-order mark is dropped.
        header: CSV / TSV: True if the first row names the columns, False if it is data, None
            to take it as a header if `looks_like_header(first row)`.

    Raises:
        ValueError: a missing file, an unknown format or encoding, text that does not decode,
            a damaged CSV quote or JSON line: one sentence naming the file and line.
    """
    file_format = file_format_of(path, file_format)
    if file_format not in FILE_FORMATS:
        raise ValueError(f"--file_format={file_format}: use auto, csv, tsv or jsonl.")
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(
            f"--encoding={encoding} is not an encoding Python knows; use e.g. utf-8 or cp1252."
        ) from None
    if not reading.is_file(path):
        raise ValueError(f"Data file not found: {path}. Check the path and its flag.")
    with reading.open_for_reading(path, binary=True) as f:
        data = f.read()
    text = _decode(path, data, encoding)
    if file_format == "jsonl":
        rows = _json_rows(path, text)
        return Table(path, list(rows[0][1]) if rows else None, rows, file_format)
    rows = _delimited_rows(path, text, "," if file_format == "csv" else "\t")
    if header is None:
        header = bool(rows) and looks_like_header(rows[0][1])
    if header and rows:
        return Table(path, [cell.strip() for cell in rows[0][1]], rows[1:], file_format)
    return Table(path, None, rows, file_format)


# Column names a header row of a classification file commonly has.
HEADER_NAMES = frozenset(
    {"text", "text_a", "text_b", "sentence", "sentence1", "sentence2", "label", "labels"}
)


def looks_like_header(cells):
    """True when a first row names columns: one of its cells is a usual column name."""
    return any(cell.strip().lower() in HEADER_NAMES for cell in cells)
