"""Progress lines of evaluation and prediction passes (training.summaries.InferenceProgress)."""

import logging

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
