"""The driver every benchmark plugs into.

A benchmark is a module of this package that ends with `harness.main(__spec__.name)` and gives

* `add_arguments(parser)`: its own options (model size, batch, steps, ...);
* `peers(args)`: the `Peer`s it compares, each measured in a process of its own;
* `measure(args, peer)`: one measurement of one peer in the current process, a dict of
  numbers (the `METRICS`, plus anything worth keeping in the JSON);
* `METRICS`: the `Metric`s its tables show.

`python -m benchmarks.<name> [options]` then runs every peer `--rounds` times, each run a fresh
`python -m benchmarks.<name> ... --measure <peer>` process (no peer inherits another's thread
pools, compiled functions or memory), the peers' order rotated from round to round so none
always runs first after a change of load. It prints a line per run and, at the end, a
Markdown table per metric: each peer's median, its ratio to its baseline's median, its best
run. `--output FILE` writes the machine, the command line, every run and the table as JSON.
`--measure PEER` alone runs one measurement in this process and prints its JSON line.
"""

import argparse
import dataclasses
import importlib
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

from fileio.atomic import open_atomically

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT_MARK = "BENCHMARK_RESULT "
_PACKAGES = ("tensorflow", "keras", "keras-hub", "tf-keras", "tf-models-official", "numpy")


@dataclasses.dataclass(frozen=True)
class Peer:
    """One thing measured.

    Attributes:
        name: What the tables call it; passed to `measure` as `peer.name`.
        baseline: The peer its ratios are taken against (None: the first peer of the list).
        env: Environment variables its process gets (e.g. `TF_USE_LEGACY_KERAS=1`, which
            tf_keras-based peers need before TensorFlow loads).
        options: Anything `measure` needs to tell this peer from the others.
    """

    name: str
    baseline: str | None = None
    env: dict = dataclasses.field(default_factory=dict)
    options: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Metric:
    """A number `measure` returns, with its unit and whether more is better."""

    key: str
    unit: str
    higher_is_better: bool = True


def rate(key="examples_per_s", unit="examples/s"):
    return Metric(key, unit, True)


def seconds(key, unit="s"):
    return Metric(key, unit, False)


def machine():
    """What the figures were measured on: CPU count and model, GPU, Python, packages, commit."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                cpu,
            )
    except OSError:
        pass
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    gpus = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        )
        if shutil.which("nvidia-smi")
        else None
    )
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "gpus": gpus.stdout.split("\n")[:-1] if gpus and gpus.returncode == 0 else [],
        "python": platform.python_version(),
        "versions": versions,
        "commit": commit or None,
    }


def run_measurement(module, argv, peer, timeout=None):
    """Runs `python -m module *argv --measure peer.name` from the repository root; returns
    the measurement's dict. Raises RuntimeError with the end of its stderr when it fails."""
    command = [sys.executable, "-m", module, *argv, "--measure", peer.name]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **peer.env}
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"{' '.join(command)} failed (exit code {done.returncode}):\n{done.stderr[-3000:]}"
        )
    return json.loads(lines[-1][len(RESULT_MARK) :])


def interleave(module, argv, peers, rounds, timeout=None, log=print):
    """Every peer once per round in its own process, the order rotated each round.

    Returns:
        {peer name: [measurement dict per round]}.
    """
    runs = {peer.name: [] for peer in peers}
    start = time.time()
    for round_index in range(rounds):
        shift = round_index % len(peers)
        for peer in peers[shift:] + peers[:shift]:
            load = os.getloadavg()[0]
            result = run_measurement(module, argv, peer, timeout)
            result["load_before"] = load
            runs[peer.name].append(result)
            numbers = ", ".join(
                f"{k}={v:.4g}"
                for k, v in result.items()
                if isinstance(v, float) and k != "load_before"
            )
            log(
                f"round {round_index + 1}/{rounds} {peer.name}: {numbers} [{time.time() - start:.0f} s]"
            )
    return runs


def summarize(runs, peers, metrics):
    """Per metric and peer: median, ratio to the baseline's median, best run."""
    rows = []
    for metric in metrics:
        for peer in peers:
            values = [r[metric.key] for r in runs[peer.name] if metric.key in r]
            base = [r[metric.key] for r in runs[peer.baseline] if metric.key in r]
            if not values:
                continue
            best = max(values) if metric.higher_is_better else min(values)
            rows.append(
                {
                    "metric": metric.key,
                    "unit": metric.unit,
                    "peer": peer.name,
                    "baseline": peer.baseline,
                    "median": statistics.median(values),
                    "ratio": _ratio(statistics.median(values), base),
                    "best": best,
                    "runs": len(values),
                }
            )
    return rows


def _ratio(value, base):
    median = statistics.median(base) if base else 0
    return value / median if median else None


def markdown(rows):
    """The summary as one Markdown table."""
    lines = ["| metric | peer | median | × baseline | best | runs |", "|---|---|---|---|---|---|"]
    for row in rows:
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f} ({row['baseline']})"
        lines.append(
            f"| {row['metric']} ({row['unit']}) | {row['peer']} | {row['median']:.4g} | "
            f"{ratio} | {row['best']:.4g} | {row['runs']} |"
        )
    return "\n".join(lines)


def main(module, argv=None):
    """The command line of the benchmark `module` (its `__spec__.name`, e.g.
    "benchmarks.classifier"); see this module's docstring.

    The benchmark module gives `add_arguments`, `peers`, `measure` and `METRICS` (the
    `Metric`s its tables show); its docstring is the `--help` text.
    """
    benchmark = sys.modules["__main__"]
    if getattr(benchmark.__spec__, "name", None) != module:
        benchmark = importlib.import_module(module)
    add_arguments, peers, measure = benchmark.add_arguments, benchmark.peers, benchmark.measure
    metrics, description = benchmark.METRICS, benchmark.__doc__
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    parser.add_argument("--rounds", type=int, default=3, help="Runs of every peer.")
    parser.add_argument("--only", default="", help="Comma-separated peers to run (default all).")
    parser.add_argument("--timeout", type=int, default=3600, help="Seconds per run.")
    parser.add_argument("--output", help="Write the machine, every run and the table as JSON.")
    parser.add_argument("--measure", metavar="PEER", help="Measure one peer in this process.")
    args = parser.parse_args(argv)
    every = peers(args)
    by_name = {peer.name: peer for peer in every}
    if args.measure:
        if args.measure not in by_name:
            parser.error(f"--measure: unknown peer {args.measure!r}; choose from {list(by_name)}.")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        # As in the driver's processes, so a peer measured by hand gets its environment too
        # (before its measure imports TensorFlow).
        os.environ.update(by_name[args.measure].env)
        result = measure(args, by_name[args.measure])
        print(RESULT_MARK + json.dumps(result), flush=True)
        return result
    only = [name for name in args.only.split(",") if name]
    unknown = [name for name in only if name not in by_name]
    if unknown:
        parser.error(f"--only: unknown peers {unknown}; choose from {list(by_name)}.")
    # Ratios are taken against the first peer unless a peer names its own baseline; a
    # baseline left out by --only is measured too, or its ratios would be empty.
    every = [dataclasses.replace(p, baseline=p.baseline or every[0].name) for p in every]
    needed = {p.baseline for p in every if not only or p.name in only}
    chosen = [p for p in every if not only or p.name in only or p.name in needed]
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}.")
    described = machine()
    print(json.dumps(described), flush=True)
    runs = interleave(module, argv, chosen, args.rounds, args.timeout)
    rows = summarize(runs, chosen, metrics)
    print("\n" + markdown(rows), flush=True)
    if args.output:
        with open_atomically(args.output) as f:
            json.dump(
                {"machine": described, "argv": argv, "runs": runs, "summary": rows}, f, indent=1
            )
    return rows
