"""A sweep's report (sweep/): statistics against numpy, expected maxima against brute
force over every subset and every ordered draw, the TSVs read back, the PNGs read back."""

import csv
import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from data import dev_metrics
from sweep import grid, plots, report
from sweep.trial import Trial

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _trial(settings, restart, status, **outcome):
    """A `Trial` as the report reads it: its seed and folder do not enter the report."""
    key = grid.trial_name(settings, restart)
    return Trial(
        key=key,
        settings=settings,
        restart=restart,
        seed={},
        output_dir=key,
        status=status,
        **outcome,
    )


def _random_trials(rng, restarts=6):
    """Trials of four settings: many complete ones (with tied scores), one complete only, none
    complete, every status present, some degenerate and some pruned with a last score."""
    grid = [
        {"learning_rate": 5e-05, "num_train_epochs": 3},
        {"learning_rate": 3e-05, "num_train_epochs": 3},
        {"learning_rate": 2e-05, "num_train_epochs": 2},
        {"learning_rate": 4e-05, "num_train_epochs": 4},
    ]
    statuses = {
        0: ["complete"] * 4 + ["pruned", "failed"],
        1: ["complete"] * 3 + ["pruned", "running", "waiting"],
        2: ["complete", "failed", "failed", "pruned", "pruned", "waiting"],
        3: ["failed", "pruned", "failed", "running", "waiting", "failed"],
    }
    trials = []
    for restart in range(restarts):
        for index, settings in enumerate(grid):
            status = statuses[index][restart]
            # Two decimals: ties between restarts are common.
            score = round(float(rng.uniform(-0.2, 0.9)), 2)
            trials.append(
                _trial(
                    dict(settings),
                    restart,
                    status,
                    dev_metric=score if status == "complete" else None,
                    degenerate=status == "complete" and score <= 0,
                    last_reported=score if status == "pruned" else None,
                )
            )
    return trials


def test_setting_label_names_each_flag_in_grid_order():
    assert report.setting_label({"learning_rate": 5e-05, "num_train_epochs": 3}) == (
        "learning_rate=5e-05 num_train_epochs=3"
    )
    assert report.setting_label({"num_train_epochs": 3, "learning_rate": 5e-05}) == (
        "num_train_epochs=3 learning_rate=5e-05"
    )
    assert report.setting_label({}) == "default"


@pytest.mark.parametrize("seed", range(5))
def test_summary_statistics_equal_numpys(seed):
    trials = _random_trials(np.random.default_rng(seed))
    rows = report.summarize(trials)
    labels = list(dict.fromkeys(report.setting_label(t.settings) for t in trials))
    assert [row.setting for row in rows] == labels
    for row in rows:
        group = [t for t in trials if report.setting_label(t.settings) == row.setting]
        scores = np.array([t.dev_metric for t in group if t.status == "complete"])
        assert row.trials == len(group)
        for status in ("complete", "pruned", "failed"):
            assert getattr(row, status) == sum(t.status == status for t in group)
        assert row.degenerate == int(np.sum(scores <= 0))
        if len(scores):
            assert row.mean == pytest.approx(np.mean(scores), abs=1e-12)
            assert row.min == np.min(scores) and row.max == np.max(scores)
        else:
            assert row.mean is row.min is row.max is None
        if len(scores) >= 2:
            assert row.std == pytest.approx(np.std(scores, ddof=1), abs=1e-12)
        else:
            assert row.std is None


def test_pruned_and_unfinished_scores_stay_out_of_the_statistics():
    settings = {"learning_rate": 2e-05}
    trials = [
        _trial(settings, 0, "complete", dev_metric=0.8),
        _trial(settings, 1, "pruned", dev_metric=0.1),
        _trial(settings, 2, "running", dev_metric=0.2),
        _trial(settings, 3, "complete", dev_metric=float("nan")),
    ]
    (row,) = report.summarize(trials)
    assert (row.mean, row.min, row.max, row.std) == (0.8, 0.8, 0.8, None)
    assert (row.trials, row.complete, row.pruned, row.failed) == (4, 2, 1, 0)


def test_an_unknown_status_is_named():
    with pytest.raises(ValueError, match="'finished'"):
        report.summarize([_trial({}, 0, "finished")])


@pytest.mark.parametrize("seed", range(6))
def test_expected_max_without_replacement_equals_every_subset(seed):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 9))
    scores = list(rng.choice([0.1, 0.5, 0.5, 0.7, 0.9], size=count) + rng.normal(0, 0.01) * seed)
    for n in range(1, count + 1):
        brute = np.mean([max(subset) for subset in itertools.combinations(scores, n)])
        assert report.expected_max_without_replacement(scores, n) == pytest.approx(brute, abs=1e-12)
    assert report.expected_max_without_replacement(scores, 1) == pytest.approx(np.mean(scores))
    assert report.expected_max_without_replacement(scores, count) == max(scores)


@pytest.mark.parametrize("seed", range(6))
def test_expected_max_with_replacement_equals_every_ordered_draw(seed):
    rng = np.random.default_rng(100 + seed)
    count = int(rng.integers(1, 6))
    scores = list(np.round(rng.uniform(0, 1, size=count), 1))  # ties at one decimal
    for n in range(1, 5):
        maxima = [max(draw) for draw in itertools.product(scores, repeat=n)]
        assert report.expected_max_with_replacement(scores, n) == pytest.approx(
            np.mean(maxima), abs=1e-12
        )
        assert report.expected_max_std_with_replacement(scores, n) == pytest.approx(
            np.std(maxima), abs=1e-9
        )
    assert report.expected_max_with_replacement(scores, 1) == pytest.approx(np.mean(scores))
    assert report.expected_max_with_replacement(scores, 500) == pytest.approx(max(scores))


def test_expected_max_stays_exact_for_hundreds_of_trials():
    # The scores 1..N: a random n-subset's maximum has mean n (N + 1) / (n + 1); n draws with
    # replacement have P(max > k) = 1 - (k / N)^n, summed over k = 0..N-1.
    count = 400
    scores = list(range(count, 0, -1))
    for n in (1, 2, 37, 200, 399, 400):
        assert report.expected_max_without_replacement(scores, n) == pytest.approx(
            n * (count + 1) / (n + 1), rel=1e-12
        )
        tail_sum = math.fsum(1 - (k / count) ** n for k in range(count))
        assert report.expected_max_with_replacement(scores, n) == pytest.approx(tail_sum, rel=1e-12)


def test_expected_max_refuses_impossible_draws():
    with pytest.raises(ValueError, match="n=4 trials cannot be drawn from 3 scores"):
        report.expected_max_without_replacement([0.1, 0.2, 0.3], 4)
    with pytest.raises(ValueError, match="at least one score"):
        report.expected_max_with_replacement([], 1)


def test_curves_per_setting_and_for_the_whole_sweep():
    trials = _random_trials(np.random.default_rng(7))
    curves = report.expected_max_curves(trials)
    spread = report.expected_max_spread(trials)
    completes = {
        row.setting: [
            t.dev_metric
            for t in trials
            if t.status == "complete" and report.setting_label(t.settings) == row.setting
        ]
        for row in report.summarize(trials)
    }
    with_scores = {label: s for label, s in completes.items() if s}
    pooled = [s for scores in with_scores.values() for s in scores]
    assert list(curves) == [*with_scores, report.ALL_SETTINGS]
    assert list(spread) == list(curves)
    for label, scores in [*with_scores.items(), (report.ALL_SETTINGS, pooled)]:
        assert [point[0] for point in curves[label]] == list(range(1, len(scores) + 1))
        for (n, with_replacement, without_replacement), std in zip(
            curves[label], spread[label], strict=True
        ):
            assert with_replacement == report.expected_max_with_replacement(scores, n)
            assert without_replacement == report.expected_max_without_replacement(scores, n)
            assert std == report.expected_max_std_with_replacement(scores, n)
    one_setting = [t for t in trials if t.settings["learning_rate"] == 5e-05]
    assert list(report.expected_max_curves(one_setting)) == [
        "learning_rate=5e-05 num_train_epochs=3"
    ]


def _read_tsv(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle, delimiter="\t"))


def _number(cell):
    return None if cell == "" else float(cell)


def test_summary_tsv_reads_back_to_the_same_numbers(tmp_path):
    rows = report.summarize(_random_trials(np.random.default_rng(3)))
    path = tmp_path / "summary.tsv"
    report.write_summary_tsv(str(path), rows)
    header, *lines = _read_tsv(path)
    assert header == list(report.SUMMARY_COLUMNS)
    assert len(lines) == len(rows)
    for line, row in zip(lines, rows, strict=True):
        cells = dict(zip(header, line, strict=True))
        assert cells["setting"] == row.setting
        for key in ("trials", "complete", "pruned", "failed", "degenerate"):
            assert int(cells[key]) == getattr(row, key)
        for key in ("mean", "std", "min", "max"):
            assert _number(cells[key]) == getattr(row, key)
    assert os.listdir(tmp_path) == ["summary.tsv"]


def test_a_sweep_whose_trials_all_failed_still_reports(tmp_path):
    trials = [
        _trial({"learning_rate": lr}, r, "failed", dev_metric=None)
        for lr in (5e-05, 3e-05)
        for r in range(2)
    ]
    rows = report.summarize(trials)
    report.write_summary_tsv(str(tmp_path / "summary.tsv"), rows)
    header, *lines = _read_tsv(tmp_path / "summary.tsv")
    assert [line[0] for line in lines] == ["learning_rate=5e-05", "learning_rate=3e-05"]
    for line in lines:
        cells = dict(zip(header, line, strict=True))
        assert (cells["trials"], cells["complete"], cells["failed"]) == ("2", "0", "2")
        assert [cells[k] for k in ("mean", "std", "min", "max")] == ["", "", "", ""]
    table = report.format_summary(rows, "eval_accuracy")
    assert "eval_accuracy" in table.splitlines()[0] and "0/2" in table
    curves = report.expected_max_curves(trials)
    assert curves == {}
    report.write_expected_max_tsv(str(tmp_path / "expected_max.tsv"), curves)
    assert _read_tsv(tmp_path / "expected_max.tsv") == [list(report.EXPECTED_MAX_COLUMNS)]
    plots.plot_expected_max(str(tmp_path / "expected_max.png"), curves, "eval_accuracy")
    plots.plot_scores(str(tmp_path / "scores.png"), trials, "eval_accuracy")
    for name in ("expected_max.png", "scores.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG_SIGNATURE)


def test_expected_max_tsv_reads_back_to_the_same_numbers(tmp_path):
    trials = _random_trials(np.random.default_rng(5))
    curves, spread = report.expected_max_curves(trials), report.expected_max_spread(trials)
    report.write_expected_max_tsv(str(tmp_path / "expected_max.tsv"), curves, spread)
    header, *lines = _read_tsv(tmp_path / "expected_max.tsv")
    assert header == list(report.EXPECTED_MAX_COLUMNS)
    expected = [
        [label, n, with_r, without_r, std]
        for label in curves
        for (n, with_r, without_r), std in zip(curves[label], spread[label], strict=True)
    ]
    assert [[line[0], int(line[1]), *map(float, line[2:])] for line in lines] == expected
    report.write_expected_max_tsv(str(tmp_path / "no_spread.tsv"), curves)
    assert {line[4] for line in _read_tsv(tmp_path / "no_spread.tsv")[1:]} == {""}


def test_format_summary_aligns_one_line_per_setting():
    rows = report.summarize(_random_trials(np.random.default_rng(1)))
    lines = report.format_summary(rows, "eval_mcc").splitlines()
    assert len(lines) == len(rows) + 1 and "eval_mcc mean ± std" in lines[0]
    # Right-aligned columns: every line's "failed" count ends where the header's word ends.
    assert {len(line) for line in lines} == {len(lines[0])}
    for line, row in zip(lines[1:], rows, strict=True):
        assert line.startswith(row.setting)
        assert f"{row.complete}/{row.trials}" in line
        if row.mean is not None:
            assert f"{row.mean:.4f}" in line and f"{row.max:.4f}" in line


def test_the_plots_are_png_images(tmp_path):
    from matplotlib import image

    trials = _random_trials(np.random.default_rng(2))
    curves, spread = report.expected_max_curves(trials), report.expected_max_spread(trials)
    plots.plot_expected_max(str(tmp_path / "expected_max.png"), curves, "eval_f1", spread)
    plots.plot_scores(str(tmp_path / "scores.png"), trials, "eval_f1")
    assert sorted(os.listdir(tmp_path)) == ["expected_max.png", "scores.png"]  # no temp left
    for name in ("expected_max.png", "scores.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG_SIGNATURE)
        pixels = image.imread(str(tmp_path / name))
        height, width = pixels.shape[:2]
        assert 300 <= height <= 1500 and 500 <= width <= 3000 and pixels.shape[2] in (3, 4)
        assert len(np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)) > 10  # drawn on


@pytest.mark.parametrize(
    "metric,scores",
    [
        ("eval_accuracy", [0.0, 0.0, 0.01, 1.0]),
        ("eval_mcc", [-1.0, -1.0, -0.98, 1.0]),
        ("f1", [0.0, 0.0, 1.0, 100.0]),
    ],
)
def test_the_drawn_spread_band_stays_inside_the_metric_range(tmp_path, metric, scores):
    """A few trials far apart near both ends of the range: mean ± std would leave it at both
    ends (asserted), and the band drawn is cut at them."""
    from matplotlib.collections import PolyCollection

    trials = [
        _trial({"learning_rate": lr}, r, "complete", dev_metric=s)
        for lr in (2e-05, 3e-05)
        for r, s in enumerate(scores)
    ]
    curves, spread = report.expected_max_curves(trials), report.expected_max_spread(trials)
    low, high = dev_metrics.metric_range(metric)
    for label, points in curves.items():
        means = [p[1] for p in points]
        assert min(m - s for m, s in zip(means, spread[label], strict=True)) < low
        assert max(m + s for m, s in zip(means, spread[label], strict=True)) > high
    figure = plots.plot_expected_max(str(tmp_path / "expected_max.png"), curves, metric, spread)
    bands = [c for c in figure.axes[0].collections if isinstance(c, PolyCollection)]
    assert len(bands) == len(curves) == 3  # the two settings and the whole sweep
    for band in bands:
        ys = np.concatenate([path.vertices[:, 1] for path in band.get_paths()])
        assert ys.min() == low and ys.max() == high
    # The lines are the expected maxima themselves, untouched.
    lines = figure.axes[0].get_lines()
    for line, points in zip(lines, curves.values(), strict=True):
        assert list(line.get_ydata()) == [p[1] for p in points]


def test_a_metric_without_a_known_range_gets_the_whole_band():
    lower, upper = plots.spread_band([0.9, 0.95], [0.2, 0.1], "eval_loss")
    assert lower == pytest.approx([0.7, 0.85]) and upper == pytest.approx([1.1, 1.05])
    lower, upper = plots.spread_band([0.9, 0.95], [0.2, 0.1], "eval_accuracy")
    assert lower == pytest.approx([0.7, 0.85]) and upper == [1.0, 1.0]


def test_the_report_loads_without_tensorflow_or_matplotlib():
    code = (
        "import sys, sweep.report, sweep.plots; "
        "print(sorted(m for m in ('tensorflow', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert out.stdout.strip() == "[]"
