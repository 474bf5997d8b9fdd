"""The tag set of an NER model: from the training file, or from a label file, one tag per line.

The set learned from training data lists "O" first, then the other IOB2 tags sorted, so the
same data always gives the same class ids. run_ner saves it as `labels.txt` in its output
directory; evaluation and prediction runs read it back, so their class ids match training's.
"""

import tensorflow as tf

from data.ner.conll import is_iob_tag, sentence_tags


def labels_from_sentences(sentences):
    """ "O" then the sorted IOB2 tags of `sentences` (a list of `data.ner.conll.Sentence`)."""
    tags = {tag for sentence in sentences for tag in sentence_tags(sentence)}
    return ["O", *sorted(tags - {"O"})]


def read_label_file(path):
    """Reads one tag per line (blank lines skipped).

    Raises:
        ValueError: naming the file and line, for a tag that is not IOB or listed twice, or a
            list without "O".
    """
    with tf.io.gfile.GFile(path, "r") as f:
        lines = f.read().split("\n")
    labels = []
    for number, line in enumerate(lines, start=1):
        tag = line.strip()
        if not tag:
            continue
        if not is_iob_tag(tag):
            raise ValueError(
                f"{path}, line {number}: {tag!r} is not an IOB tag (O, B-TYPE or I-TYPE); a "
                "label file lists one tag per line."
            )
        if tag in labels:
            raise ValueError(f"{path}, line {number}: {tag!r} is listed twice.")
        labels.append(tag)
    if "O" not in labels:
        raise ValueError(
            f"{path} does not list the tag 'O'; every NER label set needs it (the tag of words "
            "outside entities). Add a line 'O'."
        )
    return labels


def check_tags_in_labels(conll_file, labels):
    """Raises ValueError naming the file and line of the first tag (as IOB2) not in `labels`."""
    known = set(labels)
    for sentence in conll_file.sentences:
        for word, tag in zip(sentence.words, sentence_tags(sentence), strict=True):
            if tag not in known:
                as_written = "" if tag == word.tag else f" (written {word.tag!r}, IOB1)"
                raise ValueError(
                    f"{conll_file.path}, line {word.line + 1}: tag {tag!r}{as_written} is not "
                    f"in the label set {labels}. Train with data that has it, or pass a "
                    "--label_file that lists it."
                )
