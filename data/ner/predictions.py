"""Prediction files: the input file line for line, the predicted tag appended as a last column.

The layout conlleval.pl reads with its default settings (`perl conlleval.pl < file`): each
token line is the input line's columns, one space apart, then the predicted tag, so that an
evaluation file ends in `gold predicted`. Tabs and runs of blanks between the input's columns
become single spaces (the columns are the ones `data.ner.conll` reads, split at spaces and
tabs; none holds a blank). Blank lines stay blank and `-DOCSTART-` lines get `O`, so every
non-blank line has the same number of columns.
"""

from data.ner.conll import DOCSTART, split_columns
from fileio.atomic import write_atomically


def format_predictions(conll_file, word_tags):
    """Returns the prediction file's text.

    Args:
        conll_file: the `data.ner.conll.ConllFile` predicted.
        word_tags: dict (sentence index, word index) -> predicted tag, for every word.

    Raises:
        RuntimeError: if a word has no prediction.
    """
    tag_of_line = {}
    for sentence_index, sentence in enumerate(conll_file.sentences):
        for word_index, word in enumerate(sentence.words):
            key = (sentence_index, word_index)
            if key not in word_tags:
                raise RuntimeError(f"{conll_file.path}, line {word.line + 1}: no prediction")
            tag_of_line[word.line] = word_tags[key]
    out = []
    for index, line in enumerate(conll_file.lines):
        if not line.strip(" \t"):
            out.append("")
            continue
        columns = split_columns(line)
        tag = "O" if columns[0] == DOCSTART else tag_of_line[index]
        out.append(" ".join([*columns, tag]))
    return "".join(f"{line}\n" for line in out)


def write_predictions(path, conll_file, word_tags):
    """Writes `format_predictions` to `path`, atomically."""
    write_atomically(path, format_predictions(conll_file, word_tags))
