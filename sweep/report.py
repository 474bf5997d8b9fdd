"""The statistics of a sweep's trials (`sweep.trial.Trial`): the per-setting summary and the
expected best dev score.

* `summarize(trials)`: one `SettingSummary` per setting (mean, sample std, min, max, degenerate
  runs over the complete trials); `format_summary` prints it, `write_summary_tsv` writes `summary.tsv`.
* `expected_max_curves(trials)`: the expected best dev score after n trials, n = 1..N, with and
  without replacement (Dodge et al. 2019, "Show Your Work"; Dodge et al. 2021, "Expected
  Validation Performance and Estimation of a Random Variable's Maximum");
  `write_expected_max_tsv` writes `expected_max.tsv`; `expected_max_spread` gives the standard
  deviation of the with-replacement maximum (the band of Dodge et al. 2019's plots).
* `setting_label`, `by_setting`, `dev_score`: a setting's name, trials grouped by setting, and
  the score a trial contributes (the plots use them too).

Only complete trials with a finite dev score enter the statistics: a pruned trial stopped early,
so its score is partial and would bias every figure downwards; failed, running and waiting
trials have none. Degenerate trials do enter them: a diverged restart is one of the outcomes a
setting gives (Dodge et al. 2020), and the `degenerate` column counts them. numpy-free and
TensorFlow-free.
"""

import csv
import dataclasses
import io
import math

from fileio.atomic import write_atomically

# The curve of the whole sweep taken as a random search over all its complete trials; no
# setting label can take this form (a label is "default" or flag=value pairs).
ALL_SETTINGS = "all settings"
SUMMARY_COLUMNS = (
    "setting",
    "trials",
    "complete",
    "pruned",
    "failed",
    "mean",
    "std",
    "min",
    "max",
    "degenerate",
)


@dataclasses.dataclass(frozen=True)
class SettingSummary:
    """One setting's line of the summary (a column of `SUMMARY_COLUMNS` each).

    Attributes:
        setting: the setting's label (`setting_label`).
        trials, complete, pruned, failed: counts of its trials, all and by status.
        mean, min, max: over its complete trials' dev scores; None without a complete trial.
        std: their sample standard deviation (ddof=1); None with fewer than 2.
        degenerate: complete trials flagged degenerate.
    """

    setting: str
    trials: int
    complete: int
    pruned: int
    failed: int
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    degenerate: int


EXPECTED_MAX_COLUMNS = (
    "setting",
    "n",
    "expected_max_with_replacement",
    "expected_max_without_replacement",
    "std_with_replacement",
)


def setting_label(settings):
    """The setting's readable name: `flag=value` pairs in the grid's order, or "default".

    Args:
        settings: {flag: value} in the grid's order, e.g. {"learning_rate": 5e-05}.

    Returns:
        e.g. "learning_rate=5e-05 num_train_epochs=3"; "default" for an empty dict.
    """
    if not settings:
        return "default"
    return " ".join(f"{flag}={value}" for flag, value in settings.items())


def dev_score(trial):
    """The `Trial`'s dev score if it enters the statistics (a complete trial's finite score),
    else None."""
    value = trial.dev_metric
    if trial.status != "complete" or value is None or not math.isfinite(value):
        return None
    return float(value)


def by_setting(trials):
    """{label: [`Trial`, ...]} in the order each setting is first seen."""
    groups = {}
    for trial in trials:
        groups.setdefault(setting_label(trial.settings), []).append(trial)
    return groups


def _mean(values):
    return math.fsum(values) / len(values)


def summarize(trials):
    """One row per setting, in the order the settings first appear in `trials`.

    Statistics are over the complete trials' dev scores only: pruned trials stopped early and
    their partial scores stay out (they are counted under `pruned`), as do failed, running and
    waiting trials; degenerate complete trials stay in.

    Args:
        trials: the sweep's `Trial`s.

    Returns:
        A list of `SettingSummary`.
    """
    rows = []
    for label, group in by_setting(trials).items():
        scores = [s for s in map(dev_score, group) if s is not None]
        mean = _mean(scores) if scores else None
        std = None
        if len(scores) >= 2:
            std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
        rows.append(
            SettingSummary(
                setting=label,
                trials=len(group),
                complete=sum(t.status == "complete" for t in group),
                pruned=sum(t.status == "pruned" for t in group),
                failed=sum(t.status == "failed" for t in group),
                mean=mean,
                std=std,
                min=min(scores) if scores else None,
                max=max(scores) if scores else None,
                degenerate=sum(t.status == "complete" and t.degenerate for t in group),
            )
        )
    return rows


def _number(value):
    return "-" if value is None else f"{value:.4f}"


def format_summary(rows, metric):
    """The summary as an aligned text table, for the end of a sweep.

    Args:
        rows: `summarize`'s `SettingSummary`s.
        metric: the dev metric's name, e.g. "eval_f1", named in the header.

    Returns:
        The table, one line per setting under a header line, without a final newline.
    """
    header = (
        "setting",
        f"{metric} mean ± std",
        "min",
        "max",
        "degenerate",
        "complete/trials",
        "pruned",
        "failed",
    )
    lines = [header]
    for row in rows:
        spread = "" if row.mean is None else " ± " + _number(row.std)
        lines.append(
            (
                row.setting,
                _number(row.mean) + spread,
                _number(row.min),
                _number(row.max),
                str(row.degenerate),
                f"{row.complete}/{row.trials}",
                str(row.pruned),
                str(row.failed),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = []
    for line in lines:
        cells = [line[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True)]
        text.append("  ".join(cells).rstrip())
    return "\n".join(text)


def _cell(value):
    # repr: the shortest text that reads back as the same float.
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _write_tsv(path, columns, rows):
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_cell(value) for value in row] for row in rows)
    write_atomically(path, buffer.getvalue())


def write_summary_tsv(path, rows):
    """Writes `summarize`'s `SettingSummary`s as `summary.tsv`: a header line of `SUMMARY_COLUMNS`, then
    one tab-separated line per setting; a statistic without a value is an empty cell. Written
    atomically; settings without any complete trial still get their line."""
    _write_tsv(path, SUMMARY_COLUMNS, [[getattr(row, c) for c in SUMMARY_COLUMNS] for row in rows])


def _sorted_scores(scores, n, without_replacement):
    values = sorted(float(s) for s in scores)
    if not values:
        raise ValueError("The expected maximum needs at least one score.")
    if not isinstance(n, int) or n < 1 or (without_replacement and n > len(values)):
        limit = f"1..{len(values)}" if without_replacement else "at least 1"
        raise ValueError(f"n={n!r} trials cannot be drawn from {len(values)} scores; use {limit}.")
    return values


def expected_max_without_replacement(scores, n):
    """The expected maximum of n of the scores drawn at random without replacement.

    The unbiased estimator of Dodge et al. 2021: with the scores sorted ascending,
    v_(1) <= ... <= v_(N), E = sum_i v_(i) C(i-1, n-1) / C(N, n) (v_(i) is the maximum of the
    C(i-1, n-1) subsets whose largest member is the i-th). Exact integer binomials, one
    rounding per weight, so N of several hundred stays exact. Ties: any order of equal scores
    gives the same sum.

    Args:
        scores: N dev scores.
        n: subset size, 1..N; n = N gives the maximum, n = 1 the mean.

    Raises:
        ValueError: no scores, or n outside 1..N.
    """
    values = _sorted_scores(scores, n, without_replacement=True)
    total = math.comb(len(values), n)
    return math.fsum(
        v * (math.comb(i - 1, n - 1) / total) for i, v in enumerate(values, start=1) if i >= n
    )


def _with_replacement_weights(count, n):
    # P(the maximum of n draws is the i-th sorted score) = (i/N)^n - ((i-1)/N)^n, as exact
    # integers divided once.
    total = count**n
    return [(i**n - (i - 1) ** n) / total for i in range(1, count + 1)]


def expected_max_with_replacement(scores, n):
    """The expected maximum of n draws from the scores' empirical distribution.

    The estimator of Dodge et al. 2019 ("Show Your Work"): E = sum_i v_(i) ((i/N)^n -
    ((i-1)/N)^n) over the ascending scores v_(1..N). Equal scores may sit in either order: their
    weights add up to the same total.

    Args:
        scores: N dev scores.
        n: the number of draws, at least 1; n = 1 gives the mean, large n the maximum.

    Raises:
        ValueError: no scores, or n below 1.
    """
    values = _sorted_scores(scores, n, without_replacement=False)
    weights = _with_replacement_weights(len(values), n)
    return math.fsum(v * w for v, w in zip(values, weights, strict=True))


def expected_max_std_with_replacement(scores, n):
    """The standard deviation of the maximum of n draws from the scores' empirical distribution
    (the band around the expected maximum in Dodge et al. 2019): sqrt(sum_i w_i (v_(i) - E)^2)
    with `expected_max_with_replacement`'s weights w_i and value E.

    Raises:
        ValueError: no scores, or n below 1.
    """
    values = _sorted_scores(scores, n, without_replacement=False)
    weights = _with_replacement_weights(len(values), n)
    mean = math.fsum(v * w for v, w in zip(values, weights, strict=True))
    return math.sqrt(math.fsum(w * (v - mean) ** 2 for v, w in zip(values, weights, strict=True)))


def _complete_scores(trials):
    """{label: [score, ...]} of the settings with complete scores, plus ALL_SETTINGS when more
    than one setting has them (with one, the pooled curve would repeat that setting's)."""
    scores = {}
    for label, group in by_setting(trials).items():
        values = [s for s in map(dev_score, group) if s is not None]
        if values:
            scores[label] = values
    if len(scores) > 1:
        scores[ALL_SETTINGS] = [s for values in scores.values() for s in values]
    return scores


def expected_max_curves(trials):
    """The expected best dev score after n trials, per setting and for the whole sweep.

    A setting's curve draws from its own complete trials (its restarts). The `ALL_SETTINGS`
    curve takes the sweep as a random search over every complete trial of every setting, each
    equally likely, as Dodge et al. 2019 read a hyperparameter search; it is left out when only
    one setting has complete trials. Settings without complete trials have no curve.

    Args:
        trials: the sweep's `Trial`s.

    Returns:
        {label: [(n, with_replacement, without_replacement), ...]} for n = 1..N, N the number
        of complete trials the curve draws from; settings in first-seen order, ALL_SETTINGS last.
    """
    return {
        label: [
            (
                n,
                expected_max_with_replacement(values, n),
                expected_max_without_replacement(values, n),
            )
            for n in range(1, len(values) + 1)
        ]
        for label, values in _complete_scores(trials).items()
    }


def expected_max_spread(trials):
    """The standard deviation of the with-replacement maximum for each point of
    `expected_max_curves(trials)`: {label: [std at n = 1, 2, ..., N]}, the same labels."""
    return {
        label: [expected_max_std_with_replacement(values, n) for n in range(1, len(values) + 1)]
        for label, values in _complete_scores(trials).items()
    }


def write_expected_max_tsv(path, curves, spread=None):
    """Writes the curves as `expected_max.tsv`, atomically: a header line of
    `EXPECTED_MAX_COLUMNS`, then one line per setting and n; `std_with_replacement` is empty
    unless `spread` (`expected_max_spread`'s dict) is given."""
    rows = []
    for label, points in curves.items():
        stds = (spread or {}).get(label) or [None] * len(points)
        for (n, with_replacement, without_replacement), std in zip(points, stds, strict=True):
            rows.append([label, n, with_replacement, without_replacement, std])
    _write_tsv(path, EXPECTED_MAX_COLUMNS, rows)
