"""Progress lines of evaluation and prediction passes (training.summaries.InferenceProgress)
and what the fine-tuning jobs count in them (jobs.fine_tuning.progress_counting)."""

import logging

import pytest

from jobs.fine_tuning import progress_counting
from training.summaries import InferenceProgress


def test_lines_count_the_examples_and_give_an_eta(caplog):
    caplog.set_level(logging.INFO, logger="absl")
    progress = InferenceProgress("predict", total=100, every_s=0.0)
    progress.update(40)
    progress.update(60)
    progress.finish()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("predict:")]
    assert [line.split(",")[0] for line in lines] == [
        "predict: 40/100 examples",
        "predict: 100/100 examples",
        "predict: 100/100 examples",
    ]
    assert "ETA 0:00:0" in lines[0] and lines[-1].endswith("ETA 0:00:00")


def test_a_short_pass_prints_only_its_closing_line(caplog):
    caplog.set_level(logging.INFO, logger="absl")
    progress = InferenceProgress("eval", every_s=3600.0, unit="batches")
    for _ in range(5):
        progress.update(1)
    progress.finish()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("eval:")]
    assert len(lines) == 1 and lines[0].startswith("eval: 5 batches, ") and "ETA" not in lines[0]


def _closing_line(total, **counting):
    progress = InferenceProgress("predict", total=total, every_s=3600.0, **counting)
    progress.update(total)
    return progress.line()


def test_windows_are_counted_as_windows_of_their_examples():
    """A classifier's 12 long examples cut into 36 windows: the rows the pass counts are
    windows, and the line says so; "examples" counts examples only."""
    line = _closing_line(36, **progress_counting(36, 12))
    assert line.startswith("predict: 36/36 windows of 12 examples, ")
    assert " windows/s" in line and "examples/s" not in line
    assert _closing_line(12, **progress_counting(12, 12)).startswith("predict: 12/12 examples, ")


@pytest.mark.parametrize(
    "rows,items,item,expected",
    [
        (200, 200, "sentences", "predict: 200/200 sentences, "),
        (210, 200, "sentences", "predict: 210/210 windows of 200 sentences, "),
        (1, 1, "examples", "predict: 1/1 examples, "),
    ],
)
def test_one_row_per_item_counts_the_items(rows, items, item, expected):
    assert _closing_line(rows, **progress_counting(rows, items, item)).startswith(expected)
