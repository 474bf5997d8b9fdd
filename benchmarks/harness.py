"""The driver every benchmark plugs into, and what the benchmarks share to run commands (`run`,
`flags`), time their work (`Clock`, `time_calls`), write tables (`table`) and describe the
machine (`machine`).

A benchmark is a module of this package that ends with `harness.main(__spec__.name)` and gives
`add_arguments(parser)` (its options), `peers(args)` (the `Peer`s it compares),
`measure(args, peer)` (one measurement of one peer in this process: a dict of numbers) and
`METRICS` (the `Metric`s its tables show); optionally `before(args)` (run by the driver before
any round; a true result stops there) and `after(args, rows, machine)` (run after the table).
Its docstring is the `--help` text. `python -m benchmarks.<name> [options]` runs every peer
`--rounds` times, each run a fresh `python -m benchmarks.<name> ... --measure <peer>` process,
the order rotated each round; it prints a line per run and a Markdown table per metric (median,
ratio to the baseline's median, best run). `--output FILE` writes the machine, the command
line, every run and the table as JSON. `--measure PEER` alone measures one peer here.
"""

import argparse
import dataclasses
import importlib
import importlib.metadata
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from fileio.atomic import atomic_output, open_atomically

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT_MARK = "BENCHMARK_RESULT "
_PACKAGES = ("tensorflow", "keras", "keras-hub", "tf-keras", "tf-models-official", "numpy")
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_bf16", "amx_int8")


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


def written_once(path, write):
    """`path`, first written by `write(temporary path)` (then renamed into place) if missing."""
    if not os.path.exists(path):
        with atomic_output(path) as temp:
            write(temp)
    return path


def flags(**settings):
    """A command line's `--name=value` per setting (`--name` alone for True; None and False
    left out), in the order given."""
    return [
        f"--{k}" if v is True else f"--{k}={v}"
        for k, v in settings.items()
        if v is not None and v is not False
    ]


def checkpoint_flags(folder, init=True):
    """The flags of a model in Google's layout in `folder`: vocabulary, config and (`init`) its
    `bert_model.ckpt` as --init_checkpoint."""
    found = flags(vocab_file=f"{folder}/vocab.txt", bert_config_file=f"{folder}/bert_config.json")
    return found + (flags(init_checkpoint=f"{folder}/bert_model.ckpt") if init else [])


def threads_env(threads):
    """The environment that gives a TensorFlow (and OpenMP) process `threads` compute threads."""
    return {"TF_NUM_INTRAOP_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}


class Clock:
    """Wall and process CPU seconds since it was made."""

    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def elapsed(self):
        """(wall seconds, CPU seconds)."""
        return time.perf_counter() - self.wall, time.process_time() - self.cpu

    def rates(self, count, unit="examples"):
        """`count` per wall second and per CPU second, as `<unit>_per_s` and `<unit>_per_cpu_s`."""
        wall, cpu = self.elapsed()
        return {f"{unit}_per_s": count / wall, f"{unit}_per_cpu_s": count / cpu}


def time_calls(call, steps, warmup=0):
    """Calls `call()` `warmup` times untimed, then `steps` times; returns the wall and the CPU
    seconds of each timed call (two lists)."""
    for _ in range(warmup):
        call()
    walls, cpus = [], []
    for _ in range(steps):
        clock = Clock()
        call()
        wall, cpu = clock.elapsed()
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus


def versions(names=_PACKAGES):
    """{distribution: installed version or None}."""
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def machine():
    """What the figures were measured on: CPU count, model and vector flags (`CPU_FLAGS`),
    GPUs, Python, packages, commit."""
    model, flags = None, set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model is None:
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    gpus = None
    if shutil.which("nvidia-smi"):
        query = ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]
        gpus = subprocess.run(query, capture_output=True, text=True)
    return {
        "cpus": os.cpu_count(),
        "cpu": model or platform.processor() or "unknown",
        "cpu_flags": {flag: flag in flags for flag in CPU_FLAGS},
        "gpus": gpus.stdout.split("\n")[:-1] if gpus and gpus.returncode == 0 else [],
        "python": platform.python_version(),
        "versions": versions(),
        "commit": commit or None,
    }


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command, env=None, timeout=None, log=None, sample=None):
    """Runs `command` from the repository root, the one command runner of the benchmarks.

    Args:
        command: The argument list.
        env: Variables added to this process's environment.
        timeout: Seconds before `subprocess.TimeoutExpired` (the command is killed).
        log: A file path to append its output to, instead of capturing it.
        sample: Called with the command's process id about every 50 ms while it runs.

    Returns:
        (wall seconds, CPU seconds of the command and its children, stdout, stderr).

    Raises:
        RuntimeError: It failed; the message ends with the end of its stderr.
    """
    start, cpu = time.perf_counter(), _children_cpu()
    with (
        open(log or os.devnull, "a", encoding="utf-8") as appended,
        tempfile.TemporaryFile("w+", errors="replace") as out,
        tempfile.TemporaryFile("w+", errors="replace") as err,
    ):
        streams = (appended, subprocess.STDOUT) if log else (out, err)
        process = start_process(command, env, *streams)
        try:
            while True:
                try:
                    process.wait(timeout if sample is None else 0.05)
                    break
                except subprocess.TimeoutExpired:
                    if sample is None or timeout and time.perf_counter() - start > timeout:
                        raise subprocess.TimeoutExpired(command, timeout) from None
                    sample(process.pid)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        end = f"see {log}" if log else stderr[-3000:]
        raise RuntimeError(
            f"{' '.join(map(str, command))} failed (exit code {process.returncode}):\n{end}"
        )
    return wall, _children_cpu() - cpu, stdout, stderr


def start_process(command, env=None, stdout=None, stderr=None):
    """Starts `command` from the repository root with `env` added to this process's
    environment; returns its `subprocess.Popen` (`run` waits for it; a server is left running)."""
    env = {**os.environ, **(env or {})}
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=stdout, stderr=stderr)


def run_measurement(module, argv, peer, timeout=None):
    """Runs `python -m module *argv --measure peer.name`; returns the measurement's dict."""
    command = [sys.executable, "-m", module, *argv, "--measure", peer.name]
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", **peer.env}
    stdout = run(command, env, timeout)[2]
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARK)]
    if not lines:
        raise RuntimeError(f"{' '.join(command)} printed no result.")
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
            elapsed = time.time() - start
            log(f"round {round_index + 1}/{rounds} {peer.name}: {numbers} [{elapsed:.0f} s]")
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


def table(header, rows):
    """A Markdown table of `header` (column names) and `rows` (lists of cells)."""
    lines = ["| " + " | ".join(map(str, cells)) + " |" for cells in [header, *rows]]
    return "\n".join([lines[0], "|" + "---|" * len(header), *lines[1:]])


def markdown(rows):
    """The summary as one Markdown table."""
    return table(
        ["metric", "peer", "median", "× baseline", "best", "runs"],
        [
            [f"{r['metric']} ({r['unit']})", r["peer"], f"{r['median']:.4g}",
             "-" if r["ratio"] is None else f"{r['ratio']:.2f} ({r['baseline']})",
             f"{r['best']:.4g}", r["runs"]]
            for r in rows
        ],
    )  # fmt: skip


def main(module, argv=None):
    """The command line of the benchmark `module` (its `__spec__.name`); see above."""
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
    if not args.measure and hasattr(benchmark, "before") and benchmark.before(args):
        return None
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
    if hasattr(benchmark, "after"):
        benchmark.after(args, rows, described)
    return rows
