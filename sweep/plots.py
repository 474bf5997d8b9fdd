"""The sweep's plots: `expected_max.png` (expected best dev score after n trials) and
`scores.png` (every trial's dev score by setting).

matplotlib loads inside the functions, so importing this module stays cheap; figures are drawn
on the Agg canvas directly (no pyplot, no global backend or figure registry to close) and
written atomically from memory.
"""

import io

from data.dev_metrics import metric_range
from fileio.atomic import write_atomically
from sweep.report import ALL_SETTINGS, by_setting, dev_score


def _figure(width, height):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _save(figure, path):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    write_atomically(path, buffer.getvalue())


def _nothing_to_draw(axes, text):
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes)
    axes.set_xticks([])
    axes.set_yticks([])


def spread_band(means, stds, metric):
    """The ± one standard deviation band around `means`, inside the values `metric` can take.

    The maximum's distribution is skewed near a bound (an accuracy of 0.99 with a std of 0.02
    cannot reach 1.01), so the symmetric band is cut at the metric's range rather than drawn
    past it.

    Args:
        means: the expected maxima, one per n.
        stds: their standard deviations, as many.
        metric: the dev metric's key (`data.dev_metrics.metric_range`; another key is not cut).

    Returns:
        (lower, upper): lists as long as `means`.
    """
    low, high = metric_range(metric) or (float("-inf"), float("inf"))
    pairs = list(zip(means, stds, strict=True))
    return [max(low, m - s) for m, s in pairs], [min(high, m + s) for m, s in pairs]


def plot_expected_max(path, curves, metric, spread=None):
    """Draws the expected best dev score after n trials, one line per setting.

    The line is the with-replacement estimator of Dodge et al. 2019; with `spread`, a band of
    ± one standard deviation of that maximum is shaded around it, cut at the metric's range
    (`spread_band`). The ALL_SETTINGS curve (the sweep as a random search) is drawn dashed and
    black.

    Args:
        path: the PNG to write, e.g. `<sweep_dir>/expected_max.png`.
        curves: `report.expected_max_curves`'s dict.
        metric: the dev metric's key, for the y axis and the band's range.
        spread: `report.expected_max_spread`'s dict, or None for lines only.

    Returns:
        The matplotlib `Figure` drawn.
    """
    from matplotlib.ticker import MaxNLocator

    figure, axes = _figure(8, 4.8)
    if not curves:
        _nothing_to_draw(axes, "No complete trials yet.")
    for label, points in curves.items():
        ns = [p[0] for p in points]
        means = [p[1] for p in points]
        pooled = label == ALL_SETTINGS
        style = {"color": "black", "linestyle": "--"} if pooled else {}
        (line,) = axes.plot(ns, means, marker="." if len(ns) < 30 else None, label=label, **style)
        stds = (spread or {}).get(label)
        if stds:
            axes.fill_between(
                ns,
                *spread_band(means, stds, metric),
                color=line.get_color(),
                alpha=0.12,
                linewidth=0,
            )
    if curves:
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel("trials n")
        axes.set_ylabel(f"expected best dev {metric}")
        axes.set_title("Expected best dev score after n trials" + (" (± 1 std)" if spread else ""))
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(figure, path)
    return figure


def plot_scores(path, trials, metric):
    """Draws every trial's dev score, one column per setting (in first-seen order).

    Complete trials are dots (degenerate ones red crosses), with a bar at the setting's mean;
    pruned trials that carry `last_reported` are hollow circles at that partial score; failed,
    running and waiting trials have no score to draw. Points are spread sideways by a fixed
    jitter, so the same trials always give the same picture.

    Args:
        path: the PNG to write, e.g. `<sweep_dir>/scores.png`.
        trials: the sweep's `Trial`s.
        metric: the dev metric's name, for the y axis.
    """
    import numpy as np

    columns = by_setting(trials)
    # Each column as wide as its label's longest line (one flag=value per line) at small type.
    longest = max((len(part) for label in columns for part in label.split(" ")), default=0)
    figure, axes = _figure(max(6.0, len(columns) * max(1.0, 0.085 * longest) + 2), 4.8)
    rng = np.random.default_rng(0)
    kinds = {
        "complete": ([], [], {"marker": "o", "color": "tab:blue", "label": "complete"}),
        "degenerate": ([], [], {"marker": "x", "color": "tab:red", "label": "degenerate"}),
        "pruned": (
            [],
            [],
            {"marker": "o", "facecolors": "none", "edgecolors": "gray", "label": "pruned (last)"},
        ),
    }
    for x, group in enumerate(columns.values()):
        complete = []
        for trial in group:
            value = dev_score(trial)
            if value is not None:
                kind = "degenerate" if trial.degenerate else "complete"
                complete.append(value)
            elif trial.status == "pruned" and trial.last_reported is not None:
                kind, value = "pruned", trial.last_reported
            else:
                continue
            kinds[kind][0].append(x + rng.uniform(-0.15, 0.15))
            kinds[kind][1].append(value)
        if complete:
            axes.hlines(np.mean(complete), x - 0.3, x + 0.3, color="black", linewidth=1)
    drawn = False
    for xs, ys, style in kinds.values():
        if xs:
            axes.scatter(xs, ys, s=24, zorder=3, **style)
            drawn = True
    if not drawn:
        _nothing_to_draw(axes, "No trial has a dev score yet.")
    else:
        axes.set_xticks(range(len(columns)))
        axes.set_xticklabels([label.replace(" ", "\n") for label in columns], fontsize="small")
        axes.set_xlim(-0.6, len(columns) - 0.4)
        axes.set_ylabel(f"dev {metric}")
        axes.set_title("Dev score of every trial by setting (bar: mean of complete trials)")
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(figure, path)
