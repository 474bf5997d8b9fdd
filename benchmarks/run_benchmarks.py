"""Runs bench_train_step.py for every peer, interleaved over rounds, and tabulates medians.

Each measurement is a fresh process, so no peer inherits another's thread pools, compiled
functions or memory. Within a round every (mode, batch) job runs once per peer; the peer order is
rotated from round to round so that no peer always runs first after a load change. The median
of all timed steps of a peer (all rounds pooled) is compared with the fastest peer's median.

    python benchmarks/run_benchmarks.py --config mini
    python benchmarks/run_benchmarks.py --config base --rounds 3 --train_steps 4 --infer_steps 5

Prints a Markdown table per job and, with `--output`, writes every raw result as JSON.
"""

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "bench_train_step.py")
PEERS = ("ours", "ours_xla", "keras_hub", "keras_hub_xla", "model_garden", "model_garden_xla")
DEFAULT_PEERS = "ours,keras_hub,model_garden,ours_xla"
PACKAGES = ("tensorflow", "keras", "keras-hub", "tf-keras", "tf-models-official", "numpy")


def machine_description():
    """CPU count, CPU model, Python and package versions, as a dict."""
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "versions": versions,
    }


def cpu_busy_fraction(interval=2.0):
    """Fraction of all CPUs busy over `interval` seconds, from /proc/stat (None if unreadable)."""

    def sample():
        with open("/proc/stat", encoding="utf-8") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        return idle, sum(values)

    try:
        idle0, total0 = sample()
        time.sleep(interval)
        idle1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return 1.0 - (idle1 - idle0) / max(total1 - total0, 1)


def wait_for_quiet(max_wait, threshold):
    """Waits (at most `max_wait` s) until other processes use < `threshold` of the CPUs.

    Returns:
        The last busy fraction measured (None when not measured).
    """
    deadline = time.time() + max_wait
    busy = None
    while max_wait > 0:
        busy = cpu_busy_fraction()
        if busy is None or busy < threshold or time.time() >= deadline:
            break
    return busy


def run_one(peer, config, mode, batch, steps, warmup, timeout):
    """Runs one peer in a new process; returns its JSON result (raises on failure)."""
    cmd = [
        sys.executable,
        BENCH,
        f"--peer={peer}",
        f"--config={config}",
        f"--mode={mode}",
        f"--batch={batch}",
        f"--steps={steps}",
        f"--warmup={warmup}",
    ]
    env = dict(os.environ)
    if peer.startswith("model_garden"):
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"{' '.join(cmd)} failed with exit code {proc.returncode}:\n{proc.stderr[-3000:]}"
        )
    return json.loads(lines[-1])


def summarize(results, peers):
    """Per job and peer: pooled median, best step, CPU time and ratios to the fastest peer."""
    table = {}
    for r in results:
        job = (r["mode"], r["batch"])
        entry = table.setdefault(job, {}).setdefault(
            r["peer"], {"times": [], "cpu": [], "rounds": [], "load": []}
        )
        entry["times"].extend(r["times"])
        entry["cpu"].extend(r["cpu_times"])
        entry["rounds"].append(r["median"])
        entry["load"].append(r["loadavg_before"][0])
    summary = []
    for (mode, batch), by_peer in sorted(table.items()):
        medians = {p: statistics.median(e["times"]) for p, e in by_peer.items()}
        bests = {p: min(e["times"]) for p, e in by_peer.items()}
        cpus = {p: statistics.median(e["cpu"]) for p, e in by_peer.items()}
        for peer in peers:
            if peer not in by_peer:
                continue
            summary.append(
                {
                    "mode": mode,
                    "batch": batch,
                    "peer": peer,
                    "median_s": medians[peer],
                    "ratio": medians[peer] / min(medians.values()),
                    "best_s": bests[peer],
                    "best_ratio": bests[peer] / min(bests.values()),
                    "cpu_median_s": cpus[peer],
                    "cpu_ratio": cpus[peer] / min(cpus.values()),
                    "round_medians_s": by_peer[peer]["rounds"],
                    "steps": len(by_peer[peer]["times"]),
                    "mean_load": statistics.mean(by_peer[peer]["load"]),
                }
            )
    return summary


def format_table(summary, config):
    """Markdown table of `summarize` output (times in ms)."""
    lines = [
        "| config | mode | batch | peer | median ms | × fastest | best ms | × fastest "
        "| CPU ms | × fastest | round medians ms | steps | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        rounds = ", ".join(f"{v * 1000:.0f}" for v in s["round_medians_s"])
        lines.append(
            f"| {config} | {s['mode']} | {s['batch']} | {s['peer']} | "
            f"{s['median_s'] * 1000:.1f} | {s['ratio']:.2f} | "
            f"{s['best_s'] * 1000:.1f} | {s['best_ratio']:.2f} | "
            f"{s['cpu_median_s'] * 1000:.0f} | {s['cpu_ratio']:.2f} | "
            f"{rounds} | {s['steps']} | {s['mean_load']:.1f} |"
        )
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--config", default="mini", choices=("mini", "small", "base"))
    parser.add_argument("--peers", default=DEFAULT_PEERS, help="Comma-separated peer names.")
    parser.add_argument("--modes", default="train,infer", help="train, infer or both.")
    parser.add_argument("--train_batch", type=int, default=8)
    parser.add_argument("--infer_batches", default="1,8", help="Comma-separated batch sizes.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train_steps", type=int, default=10, help="Timed steps per process.")
    parser.add_argument("--infer_steps", type=int, default=20, help="Timed calls per process.")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed steps per process.")
    parser.add_argument("--timeout", type=int, default=1200, help="Seconds per process.")
    parser.add_argument(
        "--quiet_wait",
        type=float,
        default=0.0,
        help="Before each process, wait up to this many seconds for other CPU use to drop.",
    )
    parser.add_argument(
        "--quiet_busy",
        type=float,
        default=0.25,
        help="'Quiet' means less than this fraction of all CPUs busy (with --quiet_wait).",
    )
    parser.add_argument("--output", help="Write raw results and the summary to this JSON file.")
    args = parser.parse_args(argv)
    args.peers = [p for p in args.peers.split(",") if p]
    unknown = [p for p in args.peers if p not in PEERS]
    if unknown or not args.peers:
        parser.error(f"--peers: unknown {unknown}; choose from {', '.join(PEERS)}.")
    args.modes = [m for m in args.modes.split(",") if m]
    if not args.modes or any(m not in ("train", "infer") for m in args.modes):
        parser.error(f"--modes must list train and/or infer, got {args.modes}.")
    try:
        args.infer_batches = [int(b) for b in args.infer_batches.split(",") if b]
    except ValueError:
        parser.error(f"--infer_batches must be integers, got {args.infer_batches!r}.")
    for name in ("rounds", "train_steps", "infer_steps", "warmup", "train_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}.")
    return args


def main(argv=None):
    args = parse_args(argv)
    machine = machine_description()
    print(json.dumps(machine), flush=True)
    jobs = []
    if "train" in args.modes:
        jobs.append(("train", args.train_batch, args.train_steps))
    if "infer" in args.modes:
        jobs.extend(("infer", b, args.infer_steps) for b in args.infer_batches)
    results = []
    start = time.time()
    for round_index in range(args.rounds):
        shift = round_index % len(args.peers)
        order = args.peers[shift:] + args.peers[:shift]
        for mode, batch, steps in jobs:
            for peer in order:
                busy = wait_for_quiet(args.quiet_wait, args.quiet_busy)
                result = run_one(peer, args.config, mode, batch, steps, args.warmup, args.timeout)
                result["round"] = round_index
                result["busy_before"] = busy
                results.append(result)
                print(
                    f"round {round_index + 1}/{args.rounds} {mode} b={batch} {peer}: "
                    f"median {result['median']:.4f} s, first call {result['first_call_s']} s, "
                    f"load {result['loadavg_before'][0]} [{time.time() - start:.0f} s]",
                    flush=True,
                )
    summary = summarize(results, args.peers)
    print(format_table(summary, args.config))
    print(f"total wall time {time.time() - start:.0f} s", flush=True)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump({"machine": machine, "results": results, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
