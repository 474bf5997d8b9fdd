"""The user's own CSV / TSV / JSON Lines files: formats, columns, labels, and damaged files as
users have them, each ending in one sentence naming the file, line and fix."""

import csv
import io
import json

import pytest

from data.label_file import write_label_file
from data.own_data.file_processor import FileProcessor, OwnDataFiles
from data.own_data.labels import read_labels_file, sorted_labels
from data.own_data.table_reader import read_table

ROWS = [
    ("a fine film, truly", "pos"),
    ('he said "no"\tthen left', "neg"),
    ("line one\nline two", "neutral"),
    ("ok", "pos"),
]


def _write_csv(path, rows, delimiter=",", header=("text", "label"), line_end="\r\n"):
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator=line_end)
    if header:
        writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8", newline="")
    return path


def _examples(**files):
    processor = FileProcessor(OwnDataFiles(**files))
    return processor, processor.get_train_examples()


@pytest.mark.parametrize("delimiter,ending", [(",", ".csv"), ("\t", ".tsv")])
def test_csv_and_tsv_with_quotes_tabs_newlines_and_crlf(tmp_path, delimiter, ending):
    path = _write_csv(tmp_path / f"train{ending}", ROWS, delimiter)
    processor, examples = _examples(train_file=str(path))
    assert [(e.text_a, e.label) for e in examples] == ROWS
    assert processor.get_labels() == ["neg", "neutral", "pos"]
    assert [e.text_b for e in examples] == [None] * 4


def test_jsonl_and_data_dir_discovery(tmp_path):
    lines = [
        json.dumps({"sentence1": a, "sentence2": b, "label": y})
        for a, b, y in (("x", "y", 1), ("p", "q", 0), ("u", "v", 10))
    ]
    (tmp_path / "train.jsonl").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    processor = FileProcessor(OwnDataFiles(data_dir=str(tmp_path)))
    examples = processor.get_train_examples()
    assert [(e.text_a, e.text_b, e.label) for e in examples] == [
        ("x", "y", "1"),
        ("p", "q", "0"),
        ("u", "v", "10"),
    ]
    # Numbers sort as numbers, not as text ("10" after "1" and "0" as text would put it 2nd).
    assert processor.get_labels() == ["0", "1", "10"]
    assert processor.has_text_b


def test_byte_order_mark_dropped(tmp_path):
    path = tmp_path / "train.csv"
    path.write_bytes(b"\xef\xbb\xbftext,label\nhello,a\nbye,b\n")
    _, examples = _examples(train_file=str(path))
    assert [e.text_a for e in examples] == ["hello", "bye"]


def test_columns_by_name_and_position(tmp_path):
    rows = [("1", "pos", "good", "extra"), ("2", "neg", "bad", "more")]
    path = _write_csv(tmp_path / "t.tsv", rows, "\t", header=("id", "sentiment", "review", "x"))
    _, by_name = _examples(train_file=str(path), text_a_column="review", label_column="Sentiment")
    assert [(e.text_a, e.label) for e in by_name] == [("good", "pos"), ("bad", "neg")]
    bare = _write_csv(tmp_path / "bare.tsv", rows, "\t", header=None)
    _, by_position = _examples(train_file=str(bare), text_a_column="2", label_column="1")
    assert [(e.text_a, e.label) for e in by_position] == [("good", "pos"), ("bad", "neg")]


def test_given_labels_fix_the_order_and_dev_label_unseen(tmp_path):
    train = _write_csv(tmp_path / "train.csv", [("a", "pos"), ("b", "neg")])
    dev = _write_csv(tmp_path / "dev.csv", [("c", "pos"), ("d", "neutral")])
    processor = FileProcessor(
        OwnDataFiles(train_file=str(train), dev_file=str(dev), labels="pos,neutral,neg")
    )
    processor.get_train_examples()
    assert processor.get_labels() == ["pos", "neutral", "neg"]
    assert [e.label for e in processor.get_dev_examples()] == ["pos", "neutral"]
    found = FileProcessor(OwnDataFiles(train_file=str(train), dev_file=str(dev)))
    found.get_train_examples()
    with pytest.raises(ValueError) as err:
        found.get_dev_examples()
    message = str(err.value)
    assert str(dev) in message and "line 3" in message and "'neutral'" in message
    assert "--labels" in message


def test_labels_file_round_trip_and_earlier_run(tmp_path):
    write_label_file(str(tmp_path / "labels.txt"), ["z", "a", "m"])
    assert read_labels_file(str(tmp_path / "labels.txt")) == ["z", "a", "m"]
    test = _write_csv(tmp_path / "test.csv", [("q", "")], header=("text", "label"))
    processor = FileProcessor(OwnDataFiles(test_file=str(test)), earlier_runs=[str(tmp_path)])
    assert [(e.text_a, e.label) for e in processor.get_test_examples()] == [("q", "z")]
    assert processor.get_labels() == ["z", "a", "m"]
    assert sorted_labels(["b", "a", "C"]) == ["C", "a", "b"]


def test_multi_label_cells_lists_and_columns(tmp_path):
    cells = _write_csv(tmp_path / "c.csv", [("a", "4, 27"), ("b", ""), ("c", "27")])
    processor, examples = _examples(train_file=str(cells), problem_type="multi_label")
    assert [e.label for e in examples] == [("4", "27"), (), ("27",)]
    assert processor.get_labels() == ["4", "27"] and processor.is_multi_label
    path = tmp_path / "l.jsonl"
    path.write_text('{"text": "a", "labels": ["x", "y"]}\n{"text": "b", "labels": []}\n')
    processor, examples = _examples(train_file=str(path))
    assert processor.problem_type == "multi_label"
    assert [e.label for e in examples] == [("x", "y"), ()]
    flags = _write_csv(
        tmp_path / "f.csv", [("a", "1", "0"), ("b", "1", "1")], header=("text", "joy", "fear")
    )
    processor, examples = _examples(train_file=str(flags), label_columns="joy,fear")
    assert processor.get_labels() == ["joy", "fear"]
    assert [e.label for e in examples] == [("joy",), ("joy", "fear")]


def test_regression_targets(tmp_path):
    path = _write_csv(tmp_path / "r.csv", [("a", "0.5"), ("b", "3")])
    processor, examples = _examples(train_file=str(path), problem_type="regression")
    assert [e.label for e in examples] == ["0.5", "3"] and processor.is_regression
    bad = _write_csv(tmp_path / "bad.csv", [("a", "high")])
    with pytest.raises(ValueError, match=r"bad.csv, line 2: the target must be a number"):
        _examples(train_file=str(bad), problem_type="regression")


@pytest.mark.parametrize(
    "content,files,expected",
    [
        (b"text,label\nok,a\ncaf\xe9,b\n", {}, r"line 3: byte 0xe9 .*--encoding=cp1252"),
        (b"text,label\nok,a\nmissing\n", {}, r"line 3: expected at least 2 comma-separated"),
        (b"text,label\nok,a\nno label,\n", {}, r"line 3: no label in column"),
        (b'text,label\n"open quote,a\n', {}, r"line 2: .*quote"),
        (b"review,label\nok,a\n", {}, r"no column named text_a or text"),
        (b"ok,a\nno,b\n", {}, r"has no header row naming its columns: pass --text_a_column"),
        (b"text,label\nok,a\n", {"label_column": "stars"}, r"--label_column=stars: .* no such"),
        (b"", {}, r"holds no examples"),
    ],
)
def test_bad_files_one_sentence(tmp_path, content, files, expected):
    path = tmp_path / "train.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=expected) as err:
        _examples(train_file=str(path), **files)
    assert str(path) in str(err.value) or "--" in str(err.value)


def test_cp1252_read_with_its_encoding(tmp_path):
    path = tmp_path / "train.csv"
    path.write_bytes("text,label\ncafé crème,a\n".encode("cp1252"))
    _, examples = _examples(train_file=str(path), encoding="cp1252")
    assert examples[0].text_a == "café crème"


def test_empty_text_kept_with_a_warning(tmp_path, caplog):
    path = _write_csv(tmp_path / "train.csv", [("", "a"), ("x", "b")])
    _, examples = _examples(train_file=str(path))
    assert examples[0].text_a == "" and len(examples) == 2
    assert "1 rows have an empty text (first on line 2)" in caplog.text


def test_table_line_numbers_count_physical_lines(tmp_path):
    path = _write_csv(tmp_path / "t.csv", [("two\nlines", "a"), ("next", "b")])
    table = read_table(str(path))
    assert [line for line, _ in table.rows] == [2, 4]


def test_files_on_a_tensorflow_file_system():
    import tensorflow as tf

    path = "ram://own_data/train.csv"
    tf.io.gfile.makedirs("ram://own_data")
    with tf.io.gfile.GFile(path, "w") as f:
        f.write('text,label\r\n"a, b",x\r\nc,y\r\n')
    _, examples = _examples(train_file=path)
    assert [(e.text_a, e.label) for e in examples] == [("a, b", "x"), ("c", "y")]


def test_unlabelled_file_read_as_a_test_file(tmp_path):
    """A file in the task's own format without labels (distillation's transfer text): the
    training file's columns, any label cell ignored, placeholder labels."""
    _write_csv(tmp_path / "train.csv", ROWS)
    processor, _ = _examples(train_file=str(tmp_path / "train.csv"))
    bare = _write_csv(tmp_path / "more.csv", [(t,) for t, _ in ROWS], header=("text",))
    labelled = _write_csv(tmp_path / "more_labelled.csv", ROWS[::-1])
    read = processor.get_unlabelled_examples(str(bare))
    assert [e.text_a for e in read] == [t for t, _ in ROWS]
    assert {e.label for e in read} == {processor.get_labels()[0]}
    assert [e.guid for e in read] == [f"unlabelled-{i}" for i in range(len(ROWS))]
    again = processor.get_unlabelled_examples(str(labelled))
    assert [e.text_a for e in again] == [t for t, _ in ROWS[::-1]]
