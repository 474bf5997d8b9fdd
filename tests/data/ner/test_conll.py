"""CoNLL reading, IOB1 -> IOB2, label sets, prediction files and bad input."""

import os
import subprocess

import pytest

from data import label_file
from data.ner import labels as ner_labels
from data.ner.conll import read_conll, to_iob2
from data.ner.predictions import format_predictions
from tests.helpers.paths import REPO, TESTDATA

CONLL = os.path.join(TESTDATA, "conll2003")
CONLLEVAL = os.path.join(REPO, "tests", "oracles", "conlleval.pl")
GLUE_MRPC = os.path.join(TESTDATA, "glue", "MRPC", "train.tsv")


def _write(tmp_path, name, text, newline="\n"):
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return str(path)


def test_reads_the_conll_2003_slice():
    dev = read_conll(os.path.join(CONLL, "dev.txt"), "required")
    # 6 documents of the CoNLL-2003 dev set (eng.testa), 101 sentences.
    assert len(dev.sentences) == 101
    assert [s.document for s in dev.sentences][:1] == [0]
    assert len({s.document for s in dev.sentences}) == 6
    first = dev.sentences[0].words
    assert [(w.text, w.tag) for w in first[:3]] == [
        ("CRICKET", "O"),
        ("-", "O"),
        ("LEICESTERSHIRE", "B-ORG"),
    ]
    assert dev.lines[first[0].line] == "CRICKET NNP B-NP O"
    assert dev.has_tags


def test_crlf_tabs_and_spaces_read_alike(tmp_path):
    text = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP I-PER\n"
    plain = read_conll(_write(tmp_path, "a.txt", text), "required")
    crlf = read_conll(_write(tmp_path, "b.txt", text, "\r\n"), "required")
    tabs = read_conll(_write(tmp_path, "c.txt", text.replace(" ", "\t")), "required")
    for other in (crlf, tabs):
        assert [[(w.text, w.tag) for w in s.words] for s in other.sentences] == [
            [(w.text, w.tag) for w in s.words] for s in plain.sentences
        ]
    assert plain.lines == crlf.lines
    # The last sentence counts without a trailing blank line.
    assert [len(s.words) for s in plain.sentences] == [2, 1]


def test_iob1_becomes_iob2():
    assert to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]) == [
        "B-PER",
        "I-PER",
        "B-PER",
        "O",
        "B-LOC",
        "B-ORG",
    ]
    iob2 = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"]
    assert to_iob2(iob2) == iob2


def test_label_set_from_training_data_is_o_first_then_sorted(tmp_path):
    train = read_conll(_write(tmp_path, "t.txt", "a I-PER\nb I-PER\nc O\n\nd I-ORG\n"), "required")
    assert ner_labels.labels_from_sentences(train.sentences) == ["O", "B-ORG", "B-PER", "I-PER"]
    labels = ner_labels.labels_from_sentences(
        read_conll(os.path.join(CONLL, "train.txt"), "required").sentences
    )
    assert labels[0] == "O" and labels[1:] == sorted(labels[1:]) and len(labels) == 9


def test_test_file_without_tags(tmp_path):
    test = read_conll(
        _write(tmp_path, "test.txt", "-DOCSTART-\n\nEU\nrejects\n\nPeter\n"), "optional"
    )
    assert not test.has_tags
    assert [[w.text for w in s.words] for s in test.sentences] == [["EU", "rejects"], ["Peter"]]
    tags = {(0, 0): "B-ORG", (0, 1): "O", (1, 0): "B-PER"}
    assert format_predictions(test, tags) == "-DOCSTART- O\n\nEU B-ORG\nrejects O\n\nPeter B-PER\n"


def test_prediction_file_repeats_every_line(tmp_path):
    text = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\r\nrejects VBZ B-VP O\n\n\n"
    conll = read_conll(_write(tmp_path, "d.txt", text), "required")
    out = format_predictions(conll, {(0, 0): "B-ORG", (0, 1): "B-PER"})
    assert out.split("\n")[:-1] == [
        "-DOCSTART- -X- -X- O O",
        "",
        "EU NNP B-NP B-ORG B-ORG",
        "rejects VBZ B-VP O B-PER",
        "",
        "",
    ]
    # Tabs and runs of blanks between columns come out as single spaces (conlleval.pl's layout).
    tabbed = read_conll(_write(tmp_path, "e.txt", "EU\t B-ORG\n"), "required")
    assert format_predictions(tabbed, {(0, 0): "O"}) == "EU B-ORG O\n"
    with pytest.raises(RuntimeError, match="line 4: no prediction"):
        format_predictions(conll, {(0, 0): "O"})


@pytest.mark.parametrize("separator", [" ", "\t", "\t\t", "  "])
def test_conlleval_reads_prediction_files_with_its_default_settings(tmp_path, separator):
    """conlleval.pl without -d scores the prediction file of a space- or tab-separated input
    (WNUT's layout, `token<TAB>tag`; CoNLL-2003's, `token POS chunk tag`)."""
    text = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n"
    conll = read_conll(_write(tmp_path, "dev.txt", text.replace(" ", separator)), "required")
    # One entity of two found: precision 100%, recall 50%, FB1 66.67.
    predicted = {(0, 0): "B-ORG", (0, 1): "O", (1, 0): "O"}
    path = tmp_path / "eval_predictions.txt"
    path.write_text(format_predictions(conll, predicted))
    with open(path) as f:
        scored = subprocess.run(["perl", CONLLEVAL], stdin=f, capture_output=True, text=True)
    assert scored.returncode == 0, scored.stderr
    assert "processed 4 tokens with 2 phrases; found: 1 phrases; correct: 1." in scored.stdout
    assert "precision: 100.00%; recall:  50.00%; FB1:  66.67" in scored.stdout


def test_a_tab_separated_column_with_a_space_is_refused(tmp_path):
    path = _write(tmp_path, "train.txt", "EU\tB-ORG\nNew York\tB-LOC\n")
    with pytest.raises(ValueError) as error:
        read_conll(path, "required")
    assert str(error.value) == (
        f"{path}, line 2: 3 columns where line 1 has 2. Line 2's tab-separated column "
        "'New York' holds a space, and columns are split at spaces as well as tabs "
        "(conlleval.pl reads them so); write it without spaces (e.g. 'New_York')."
    )


@pytest.mark.parametrize(
    "text,tags,message",
    [
        ("EU B-ORG\nrejects\n", "required", "line 2: 'rejects' has no tag column"),
        ("", "required", "holds no token lines"),
        ("\n\n-DOCSTART- -X- O\n\n", "optional", "holds no token lines"),
        ("EU B-ORG\nrejects VBZ O\n", "optional", "line 2: 3 columns where line 1 has 2"),
        ("EU S-ORG\n", "required", "line 1: tag 'S-ORG' is not an IOB tag"),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, text, tags, message):
    path = _write(tmp_path, "bad.txt", text)
    with pytest.raises(ValueError, match=message) as error:
        read_conll(path, tags)
    assert path in str(error.value)


def test_a_glue_tsv_is_not_conll():
    with pytest.raises(ValueError, match="line 1: .*Is this a CoNLL file"):
        read_conll(GLUE_MRPC, "required")
    with pytest.raises(ValueError, match="columns where line 1 has"):
        read_conll(GLUE_MRPC, "optional")


def test_label_file_checks(tmp_path):
    good = _write(tmp_path, "labels.txt", "O\nB-PER\nI-PER\n\n")
    assert ner_labels.read_label_file(good) == ["O", "B-PER", "I-PER"]
    with pytest.raises(ValueError, match="does not list the tag 'O'"):
        ner_labels.read_label_file(_write(tmp_path, "no_o.txt", "B-PER\nI-PER\n"))
    with pytest.raises(ValueError, match="line 2: 'B-PER' is listed twice"):
        ner_labels.read_label_file(_write(tmp_path, "twice.txt", "B-PER\nB-PER\nO\n"))
    with pytest.raises(ValueError, match="line 1: 'PERSON' is not an IOB tag"):
        ner_labels.read_label_file(_write(tmp_path, "bad.txt", "PERSON\nO\n"))
    label_file.write_label_file(str(tmp_path / "out.txt"), ["O", "B-X"])
    assert ner_labels.read_label_file(str(tmp_path / "out.txt")) == ["O", "B-X"]


def test_tag_outside_the_label_set_names_file_and_line(tmp_path):
    dev = read_conll(_write(tmp_path, "dev.txt", "a O\n\nb I-LOC\n"), "required")
    with pytest.raises(ValueError, match=r"dev.txt, line 3: tag 'B-LOC' \(written 'I-LOC', IOB1\)"):
        ner_labels.check_tags_in_labels(dev, ["O", "B-PER", "I-PER"])
    ner_labels.check_tags_in_labels(dev, ["O", "B-LOC"])
