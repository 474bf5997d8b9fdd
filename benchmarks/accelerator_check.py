"""The accelerator check: correctness of the distributed, mixed-precision and XLA paths on this
machine's GPUs, then pre-training throughput of this project's `Trainer` beside Model Garden's
`BertPretrainer` over models, phases, precisions and XLA. Run it through
`benchmarks/accelerator_check.sh`; see benchmarks/README.md ("Accelerator check").

Every measurement runs in a process of its own (`--rows_per_process 1`), so a crash or an
out-of-memory error costs one row: a row that runs out of memory is retried once at half the
batch. Rows run in order of importance, the headline (BERT-large phase 1, mixed_bfloat16 + XLA,
both peers) first; once `--budget_s` (counted from the start, checks included) would be
exceeded, the remaining rows are marked "skipped (budget)". The JSON (`--out`) is rewritten
after every row, so an interrupted run keeps what it measured.

`--dry_run` runs everything on the CPU with a tiny model (2 layers, hidden 32; phase 1 at seq
32, phase 2 at seq 64), 2 timed steps and a reduced matrix, `DRY_RUN_ROWS` per peer, which
covers every precision, both XLA settings, both phases and every compiled-step variant of each
peer (the whole step as one XLA cluster, forward and backward compiled with a float16 loss
scale, no XLA). The rows of one peer share a process there, since a process start and its
TensorFlow import cost as much as a tiny row.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "benchmarks")
sys.path.insert(0, BENCH)
sys.path.insert(1, REPO)

from accelerator_report import finish_row, table  # noqa: E402  (benchmarks/ is on sys.path)

PRECISIONS = ("mixed_bfloat16", "mixed_float16", "float32")
PEERS = ("ours", "model_garden")
MODES = {"ours": "loop", "model_garden": "model_garden"}
# (config, phase) -> (seq, masked positions, batch per GPU), the order in which they run.
SHAPES = {
    ("large", 1): (128, 20, 128),
    ("base", 1): (128, 20, 256),
    ("large", 2): (512, 80, 32),
    ("base", 2): (512, 80, 64),
}
DRY_SHAPES = {("tiny", 1): (32, 5, 8), ("tiny", 2): (64, 10, 8)}
# (phase, precision, xla): the dry run's rows for each peer.
DRY_RUN_ROWS = ((1, "mixed_bfloat16", True), (2, "mixed_float16", True), (1, "float32", False))
# Order of the precision / XLA settings: the fastest settings, which a run on a lent machine
# must reach first, before the others.
SETTING_ORDER = [(p, x) for x in (True, False) for p in PRECISIONS[:2]]
SETTING_ORDER += [("float32", True), ("float32", False)]
OOM_MARKERS = ("ResourceExhausted", "OOM when allocating", "out of memory")


def plan_rows(args):
    """The rows to measure, in the order they run."""
    rows = []
    if args.dry_run:
        for peer in PEERS:
            for phase, precision, xla in DRY_RUN_ROWS:
                rows.append(
                    dict(config="tiny", phase=phase, precision=precision, xla=xla, peer=peer)
                )
    else:
        for precision, xla in SETTING_ORDER:
            for config, phase in SHAPES:
                for peer in PEERS:
                    rows.append(
                        dict(config=config, phase=phase, precision=precision, xla=xla, peer=peer)
                    )
    shapes = DRY_SHAPES if args.dry_run else SHAPES
    chosen = []
    for row in rows:
        if args.dry_run:
            keep = True
        else:
            keep = row["config"] in args.configs and row["phase"] in args.phases
        keep = keep and row["precision"] in args.precisions and row["peer"] in args.peers
        if keep and ("on" if row["xla"] else "off") in args.xla:
            seq, preds, batch = shapes[(row["config"], row["phase"])]
            chosen.append(dict(row, seq=seq, preds=preds, batch=batch, status="pending"))
    if args.dry_run:
        # Peer by peer, so that each peer's rows can share a process.
        chosen.sort(key=lambda r: PEERS.index(r["peer"]))
    return chosen


def row_cli(row, args, data, num_gpus):
    """`bench_pretraining_loop.py` flags of one row (the batch is per GPU)."""
    cli = ["--mode", MODES[row["peer"]], "--strategy", "mirrored", "--config", row["config"]]
    cli += ["--batch", str(row["batch"] * max(num_gpus, 1)), "--seq", str(row["seq"])]
    cli += ["--preds", str(row["preds"]), "--precision", row["precision"], "--data", data]
    cli += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    cli += ["--iterations_per_loop", str(args.iterations_per_loop)]
    return cli + (["--xla"] if row["xla"] else [])


def worker(spec_file):
    """Measures each row of `spec_file` in this process; prints one `ROW {json}` line each.

    `spec_file` holds `[{"index", "cli", "data"}]`, every row of one peer; `data` is the
    `[path, seq, preds, count]` of the row's TFRecords, written here if missing (by the first
    row that reads them, outside its timed window).
    """
    with open(spec_file) as f:
        specs = json.load(f)
    if any("model_garden" in spec["cli"] for spec in specs):
        # Model Garden runs on tf_keras: set before TensorFlow is imported.
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    import bench_pretraining_loop

    for spec in specs:
        start = time.perf_counter()
        try:
            path, seq, preds, count = spec["data"]
            if not os.path.exists(path):
                bench_pretraining_loop.write_records(path + ".tmp", count, seq, preds)
                os.replace(path + ".tmp", path)
            args = bench_pretraining_loop.build_parser().parse_args(spec["cli"])
            result = bench_pretraining_loop.measure_row(args)
        except Exception as error:  # One row fails; the next one runs.
            text = f"{type(error).__name__}: {error}"
            result = {"error": text.splitlines()[0][:300]}
            result["oom"] = any(marker in text for marker in OOM_MARKERS)
        result["wall_s"] = time.perf_counter() - start
        print("ROW " + json.dumps([spec["index"], result]), flush=True)


def _subprocess(cmd, env, timeout):
    """(stdout, stderr, failure or None) of `cmd`, run from the repository root."""
    try:
        done = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as expired:
        out, err = (
            x.decode() if isinstance(x, bytes) else (x or "")
            for x in (expired.stdout, expired.stderr)
        )
        return out, err, f"timeout after {timeout:.0f} s"
    failure = None if done.returncode == 0 else f"exited with status {done.returncode}"
    return done.stdout, done.stderr, failure


def _last_line(text):
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def run_group(group, rows, env, work_dir, timeout):
    """Runs the rows `group` (indices into `rows`, one peer) in one worker process."""
    spec_file = os.path.join(work_dir, f"rows_{group[0]}.json")
    with open(spec_file, "w") as f:
        json.dump([{"index": i, "cli": rows[i]["cli"], "data": rows[i]["data"]} for i in group], f)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", spec_file]
    out, err, failure = _subprocess(cmd, env, timeout)
    seen = set()
    for line in out.splitlines():
        if line.startswith("ROW "):
            index, result = json.loads(line[4:])
            seen.add(index)
            rows[index].update(result)
            rows[index]["status"] = "error" if "error" in result else "ok"
    for index in group:
        if index not in seen:
            oom = any(marker in err for marker in OOM_MARKERS)
            why = failure or "no result"
            rows[index].update(status="error", error=f"{why}: {_last_line(err)}", oom=oom)


def run_rows(rows, args, env, work_dir, deadline, save):
    """Runs every row within the budget (see the module docstring); `save()` after each."""
    per_process = len(rows) if args.dry_run and not args.rows_per_process else args.rows_per_process
    per_process = max(per_process or 1, 1)
    pending = list(range(len(rows)))
    walls = {}  # (config, phase) -> the longest wall time of one such row so far
    while pending:
        peer = rows[pending[0]]["peer"]
        group = [i for i in pending if rows[i]["peer"] == peer][:per_process]
        keys = [(rows[i]["config"], rows[i]["phase"]) for i in group]
        guess = max(walls.values(), default=0.0)
        estimate = sum(walls.get(k, guess) for k in keys)
        remaining = deadline - time.monotonic()
        pending = [i for i in pending if i not in group]
        if remaining <= 0 or estimate > remaining:
            for i in group:
                rows[i]["status"] = "skipped (budget)"
            save()
            continue
        start = time.monotonic()
        run_group(group, rows, env, work_dir, min(remaining, args.row_timeout_s * len(group)))
        per_row = (time.monotonic() - start) / len(group)
        for key in keys:
            walls[key] = max(walls.get(key, 0.0), per_row)
        for i in group:
            row = rows[i]
            finish_row(row, args.peak_tflops)
            print(f"  {describe(row)}: {row_status(row)}", flush=True)
            if row.get("oom") and not row.get("retried") and row["batch"] > 1:
                # Out of memory: once more at half the batch, as the next row to run.
                row.update(retried=True, note=f"batch halved after OOM (was {row['batch']})")
                row["batch"] //= 2
                row["cli"] = retarget(row["cli"], "--batch", row["batch"] * max(args.num_gpus, 1))
                row.pop("error", None)
                pending.insert(0, i)
        save()


def retarget(cli, flag, value):
    cli = list(cli)
    cli[cli.index(flag) + 1] = str(value)
    return cli


def describe(row):
    xla = "+XLA" if row["xla"] else ""
    return f"{row['config']} phase {row['phase']} {row['precision']}{xla} {row['peer']}"


def row_status(row):
    if row["status"] == "ok":
        text = f"{row['seq_per_s_per_gpu']:.1f} seq/s per GPU"
        return text + (f" ({row['note']})" if row.get("note") else "")
    if row["status"] == "error":
        return "error: " + row.get("error", "")
    return row["status"]


def run_checks(args, env, work_dir, deadline):
    """The correctness part, in its own process; returns (checks, devices)."""
    out = os.path.join(work_dir, "checks.json")
    cmd = [sys.executable, os.path.join(BENCH, "accelerator_correctness.py"), "--out", out]
    cmd += ["--mixed_steps", str(args.mixed_steps)]
    timeout = max(min(deadline - time.monotonic(), args.checks_timeout_s), 1)
    _, err, failure = _subprocess(cmd, env, timeout)
    if failure or not os.path.exists(out):
        detail = f"correctness process {failure}: {_last_line(err)}"
        return [{"name": "correctness", "passed": False, "detail": detail}], []
    with open(out) as f:
        result = json.load(f)
    return result["checks"], result["devices"]


def gpu_names(env):
    """Names of the visible GPUs, from a process of their own."""
    code = "import json, tensorflow as tf; "
    code += "print(json.dumps([d.name for d in tf.config.list_physical_devices('GPU')]))"
    out, _, failure = _subprocess([sys.executable, "-c", code], env, 120)
    return [] if failure else json.loads(_last_line(out) or "[]")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry_run", action="store_true", help="CPU, tiny model, reduced rows.")
    parser.add_argument("--out", default="accelerator_check.json", help="JSON file to write.")
    parser.add_argument("--configs", default="large,base", help="Models: large, base.")
    parser.add_argument("--phases", default="1,2", help="1 (seq 128), 2 (seq 512).")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--xla", default="on,off", help="XLA settings to run: on, off.")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--budget_s", type=float, default=420, help="For everything, checks too.")
    parser.add_argument("--row_timeout_s", type=float, default=300)
    parser.add_argument("--checks_timeout_s", type=float, default=180)
    parser.add_argument("--skip_checks", action="store_true")
    parser.add_argument("--checks_only", action="store_true")
    parser.add_argument("--peak_tflops", type=float, default=989.0, help="Dense bf16 peak/GPU.")
    parser.add_argument("--warmup", type=int, default=None, help="Untimed steps (default 10).")
    parser.add_argument("--steps", type=int, default=None, help="Timed steps (default 20).")
    parser.add_argument("--iterations_per_loop", type=int, default=None, help="Default 10.")
    parser.add_argument("--mixed_steps", type=int, default=None, help="Steps of the curves.")
    parser.add_argument("--rows_per_process", type=int, default=None, help="Default 1.")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    # Dry-run defaults: 2 untimed and 2 timed steps, one step per call, shorter curves.
    small = args.dry_run
    for name, full, dry in (
        ("warmup", 10, 2),
        ("steps", 20, 2),
        ("iterations_per_loop", 10, 1),
        ("mixed_steps", 200, 40),
    ):
        if getattr(args, name) is None:
            setattr(args, name, dry if small else full)
    args.configs = args.configs.split(",")
    args.phases = [int(p) for p in args.phases.split(",")]
    args.precisions, args.xla = args.precisions.split(","), args.xla.split(",")
    args.peers = args.peers.split(",")
    return args


def add_data(rows, args, work_dir):
    """Gives each row its TFRecords, one file per (seq, preds), and its command line."""
    for row in rows:
        key = (row["seq"], row["preds"])
        biggest = max(r["batch"] for r in rows if (r["seq"], r["preds"]) == key)
        count = 64 if args.dry_run else max(512, 4 * biggest * max(args.num_gpus, 1))
        path = os.path.join(work_dir, f"data_{key[0]}_{key[1]}.tfrecord")
        row["data"] = [path, key[0], key[1], count]
        row["cli"] = row_cli(row, args, path, args.num_gpus)


def main():
    args = parse_args()
    if args.worker:
        return worker(args.worker)
    deadline = time.monotonic() + args.budget_s
    started = time.time()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    env.pop("TF_USE_LEGACY_KERAS", None)  # only Model Garden's workers run on tf_keras
    if args.dry_run:
        env["CUDA_VISIBLE_DEVICES"] = ""
        # XLA's CPU compiler without LLVM optimisation: the dry run's compiles take about
        # two thirds of the time, and its figures are not measurements anyway.
        flags = env.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0"
        env["XLA_FLAGS"] = flags.strip()
    elif env.get("CUDA_VISIBLE_DEVICES") == "":
        print("CUDA_VISIBLE_DEVICES is empty, which hides every GPU: unset for this check.")
        env.pop("CUDA_VISIBLE_DEVICES")
    result = {"meta": {}, "checks": [], "rows": []}

    def save():
        meta = result["meta"]
        meta.update(dry_run=args.dry_run, budget_s=args.budget_s, peak_tflops=args.peak_tflops)
        meta.update(warmup=args.warmup, steps=args.steps, ipl=args.iterations_per_loop)
        meta.update(elapsed_s=time.time() - started, num_gpus=getattr(args, "num_gpus", None))
        devices = {r["device"] for r in result["rows"] if r.get("device")}
        meta["device"] = ", ".join(sorted(devices)) or None
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
        os.replace(args.out + ".tmp", args.out)

    with tempfile.TemporaryDirectory(prefix="accelerator_check_") as work_dir:
        devices = None
        if not args.skip_checks:
            print("Correctness on this machine's devices:", flush=True)
            checks_start = time.time()
            result["checks"], devices = run_checks(args, env, work_dir, deadline)
            result["meta"]["checks_s"] = time.time() - checks_start
            for check in result["checks"]:
                verdict = "PASS" if check["passed"] else "FAIL"
                print(f"  {verdict} {check['name']}: {check['detail']}", flush=True)
            save()
        if devices is None or not devices:
            devices = [] if args.dry_run else gpu_names(env)
        args.num_gpus = sum("GPU" in d for d in devices)
        if not args.dry_run and not args.num_gpus:
            print("No GPU is visible: nothing measured (use --dry_run on a CPU).")
            save()
            return 2
        if not args.checks_only:
            rows = plan_rows(args)
            add_data(rows, args, work_dir)
            result["rows"] = rows
            where = f"{args.num_gpus} GPU(s)" if args.num_gpus else "the CPU (dry run)"
            print(f"Throughput, {len(rows)} rows, on {where}:", flush=True)
            run_rows(rows, args, env, work_dir, deadline, save)
    print()
    print(table(result["rows"], args))
    save()
    print(f"\nWrote {args.out}")
    failed = [c for c in result["checks"] if not c["passed"]]
    failed += [r for r in result["rows"] if r["status"] == "error"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
