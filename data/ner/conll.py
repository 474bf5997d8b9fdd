"""CoNLL-format NER files, as distributed: one token per line, the tag last, sentences apart.

A line is `token [other columns ...] tag`, columns separated by spaces or tabs (CoNLL-2003 has
`word POS chunk NER`; WNUT and most biomedical sets have `word tag`). A blank line ends a
sentence; a `-DOCSTART-` line ends a document. CRLF and LF line breaks both read. Tags are IOB:
`O`, `B-TYPE`, `I-TYPE` (or `B`/`I` without a type); the raw CoNLL-2003 files use IOB1 (`B-`
only between two adjacent entities of one type), most copies IOB2 (`B-` on every first word).
Training uses IOB2 (`to_iob2`); scoring takes both (`data.ner.metrics`).

Every line is kept (`ConllFile.lines`) so that prediction files can repeat the input line for
line with the predicted tag appended.
"""

import dataclasses
import re

DOCSTART = "-DOCSTART-"
_COLUMN_SEPARATOR = re.compile(r"[ \t]+")
_IOB_TAG = re.compile(r"^(O|[BI](-\S+)?)$")


@dataclasses.dataclass(frozen=True)
class Word:
    """One token line.

    Attributes:
        text: the token (first column).
        tag: the tag (last column) as written in the file; None when the file has no tags.
        line: index of the line in `ConllFile.lines` (0-based).
    """

    text: str
    tag: str | None
    line: int


@dataclasses.dataclass
class Sentence:
    """The words between two blank (or `-DOCSTART-`) lines, and the document they belong to."""

    words: list
    document: int


@dataclasses.dataclass
class ConllFile:
    """A whole CoNLL file.

    Attributes:
        path: where it was read from.
        lines: every line of the file without its line break (and trailing blanks), in order.
        sentences: its sentences in order; `Sentence.document` counts `-DOCSTART-` lines.
        has_tags: whether every token line carries a tag.
    """

    path: str
    lines: list
    sentences: list
    has_tags: bool


def split_columns(line):
    """The columns of a token line: split at every run of spaces and tabs (as conlleval.pl
    splits its input at spaces), so no column holds a blank."""
    return _COLUMN_SEPARATOR.split(line.strip(" \t"))


def _spaced_tab_column(line):
    """The first tab-separated column of `line` with a space inside, or None."""
    if "\t" not in line:
        return None
    for field in line.strip(" \t").split("\t"):
        if " " in field.strip(" "):
            return field.strip(" ")
    return None


def _column_count_message(path, lines, index, count, first):
    """Why line `index` has `count` columns where line `first` has another number."""
    where = f"{path}, line {index + 1}: {count} columns where line {first + 1} has "
    where += f"{len(split_columns(lines[first]))}."
    for line_index in (index, first):
        field = _spaced_tab_column(lines[line_index])
        if field is not None:
            return (
                f"{where} Line {line_index + 1}'s tab-separated column {field!r} holds a space, "
                "and columns are split at spaces as well as tabs (conlleval.pl reads them so); "
                f"write it without spaces (e.g. {field.replace(' ', '_')!r})."
            )
    return (
        f"{where} Every token line of a CoNLL file has the same columns (token first, tag last, "
        "separated by spaces or tabs)."
    )


def is_iob_tag(tag):
    """Whether `tag` is `O`, `B-TYPE`, `I-TYPE`, `B` or `I`."""
    return bool(_IOB_TAG.match(tag))


def split_tag(tag):
    """(prefix, type) of a tag the way conlleval.pl splits it: at the first "-", else no type."""
    prefix, dash, chunk_type = tag.partition("-")
    return (prefix, chunk_type) if dash else (tag, "")


def to_iob2(tags):
    """Rewrites IOB1 tags as IOB2: an `I-X` that starts an entity becomes `B-X`.

    An `I-` tag starts an entity after `O`, after a tag of another type, or first in the
    sentence. IOB2 input comes back unchanged.

    Args:
        tags: the tags of one sentence.

    Returns:
        list of tags.
    """
    result = []
    previous_prefix, previous_type = "O", ""
    for tag in tags:
        prefix, chunk_type = split_tag(tag)
        if prefix == "I" and (previous_prefix == "O" or previous_type != chunk_type):
            prefix = "B"
            tag = "B" + tag[1:]
        result.append(tag)
        previous_prefix, previous_type = prefix, chunk_type
    return result


def _not_iob_message(path, line_number, tag):
    return (
        f"{path}, line {line_number}: tag {tag!r} is not an IOB tag (O, B-TYPE or I-TYPE). Is "
        "this a CoNLL file (token first, tag last, columns separated by spaces or tabs, a blank "
        "line between sentences)? IOBES tags (E-, S-) are not read; convert them to IOB2."
    )


def _read_lines(path):
    # TensorFlow only here, for its file systems: the TFLite predictor builds `Sentence`s of
    # this module and starts without TensorFlow.
    import tensorflow as tf

    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text ({e}); re-encode it as UTF-8.") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    # Trailing blanks (and the CR of CRLF files) carry nothing; a space-only line is blank.
    return [line.rstrip(" \t\r") for line in lines]


def read_conll(path, tags):
    """Reads a CoNLL file.

    Args:
        path: the file (any file system TensorFlow knows).
        tags: "required" (training and evaluation files: every token line needs an IOB tag as
            its last column), or "optional" (test files: tags are read when every token line
            has an IOB tag as its last column, otherwise the file is read as untagged tokens).

    Returns:
        `ConllFile`.

    Raises:
        ValueError: naming the file and line, for a token line without a tag column or with
            a tag that is not IOB (when tags are required), token lines whose number of
            columns differs (not a CoNLL file), or a file without any token line.
    """
    if tags not in ("required", "optional"):
        raise ValueError(f"tags={tags!r}; use 'required' or 'optional'.")
    lines = _read_lines(path)
    rows = []  # (line index, columns) of token lines, None at sentence/document boundaries
    columns_seen = None
    for index, line in enumerate(lines):
        if not line.strip(" \t"):
            rows.append(None)
            continue
        columns = split_columns(line)
        if columns[0] == DOCSTART:
            rows.append(DOCSTART)
            continue
        if tags == "required":
            if len(columns) < 2:
                raise ValueError(
                    f"{path}, line {index + 1}: {line!r} has no tag column. Each token line of "
                    "a training or evaluation file is 'token ... tag' (token first, tag last)."
                )
            if not is_iob_tag(columns[-1]):
                raise ValueError(_not_iob_message(path, index + 1, columns[-1]))
        if columns_seen is None:
            columns_seen = (len(columns), index)
        elif len(columns) != columns_seen[0]:
            raise ValueError(
                _column_count_message(path, lines, index, len(columns), columns_seen[1])
            )
        rows.append((index, columns))

    token_rows = [row for row in rows if isinstance(row, tuple)]
    if not token_rows:
        raise ValueError(
            f"{path} holds no token lines. A CoNLL file has one 'token ... tag' line per word "
            "and a blank line between sentences."
        )
    has_tags = all(len(cols) >= 2 and is_iob_tag(cols[-1]) for _, cols in token_rows)

    sentences = []
    words = []
    document = 0
    for row in [*rows, None]:
        if isinstance(row, tuple):
            index, columns = row
            words.append(Word(columns[0], columns[-1] if has_tags else None, index))
            continue
        if words:
            sentences.append(Sentence(words, document))
            words = []
        if row == DOCSTART and sentences and sentences[-1].document == document:
            document += 1
    return ConllFile(path, lines, sentences, has_tags)


def sentence_tags(sentence):
    """The sentence's tags as IOB2 (what the model learns and predicts)."""
    return to_iob2([word.tag for word in sentence.words])
