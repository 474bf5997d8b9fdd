"""Prediction files: the input file line for line, the predicted tag appended as a last column.

Blank lines stay blank and `-DOCSTART-` lines get `O`, so every non-blank line has the same
number of columns and conlleval.pl reads an evaluation file as it is (`gold predicted` as the
last two columns). The new column is separated like the line's own columns (a tab when the
line uses tabs; conlleval.pl then needs `-d "\\t"`).
"""

from data.ner.conll import DOCSTART
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
        content = line.strip(" \t")
        if not content:
            out.append("")
            continue
        separator = "\t" if "\t" in content else " "
        tag = "O" if content.split()[0] == DOCSTART else tag_of_line[index]
        out.append(f"{content}{separator}{tag}")
    return "".join(f"{line}\n" for line in out)


def write_predictions(path, conll_file, word_tags):
    """Writes `format_predictions` to `path`, atomically."""
    write_atomically(path, format_predictions(conll_file, word_tags))
