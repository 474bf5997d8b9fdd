"""The accelerator check: correctness of the distributed, mixed-precision and XLA paths on this
machine's GPUs, then pre-training throughput of this project's `Trainer` beside Model Garden's
`BertPretrainer` over models, phases, precisions and XLA, as one table. Run it as
`bash benchmarks/accelerator_check.sh`; see benchmarks/README.md ("Accelerator check").

Every row is one `benchmarks.pretraining_loop` measurement in a process of its own (a row out
of memory is retried once at half the batch), the headline first; a row whose expected time no
longer fits in `--budget_s` is "skipped (budget)"; the JSON is rewritten after every row.
`--dry_run`: the CPU, a tiny model, 2 timed steps and `DRY_RUN_ROWS` per peer (every precision,
both XLA settings, both phases).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks import harness, pretraining_loop
from fileio.atomic import open_atomically

PRECISIONS = ("mixed_bfloat16", "mixed_float16", "float32")
PEERS = ("ours", "model_garden")
# The check's peers by the `benchmarks.pretraining_loop` peers that measure them; the memory
# rows' peers are ours with --num_accumulation_steps=auto, without and with checkpointing.
LOOP_PEERS = {"ours": "loop", "model_garden": "model_garden"}
LOOP_PEERS.update(ours_auto="loop", ours_auto_ckpt="loop")
# The memory rows (BERT-large at seq 512, global batch 32 on one GPU, the micro-batch chosen by
# auto: peak memory and seq/s), run after the headline; in the dry run, the tiny phase 2.
MEMORY_ROWS = [
    dict(config="large", phase=2, precision="mixed_bfloat16", xla=True, peer=peer)
    for peer in ("ours_auto", "ours_auto_ckpt")
]
MEMORY_BATCH = 32
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
# The fastest settings first: a run on a machine lent for minutes must reach them.
SETTING_ORDER = [(p, x) for x in (True, False) for p in PRECISIONS[:2]]
SETTING_ORDER += [("float32", True), ("float32", False)]
OOM_MARKERS = ("ResourceExhausted", "OOM when allocating", "out of memory")
GOAL_SEQ_PER_S, NVIDIA_A100_SEQ_PER_S = 1850, 486


def plan_rows(args):
    """The rows to measure, in the order they run."""
    if args.dry_run:
        rows = [
            dict(config="tiny", phase=phase, precision=precision, xla=xla, peer=peer)
            for peer in PEERS
            for phase, precision, xla in DRY_RUN_ROWS
        ]
        rows = [r for r in rows if r["precision"] in args.precisions and r["peer"] in args.peers]
    else:
        rows = [
            dict(config=config, phase=phase, precision=precision, xla=xla, peer=peer)
            for precision, xla in SETTING_ORDER
            for config, phase in SHAPES
            for peer in PEERS
            if config in args.configs
            and phase in args.phases
            and precision in args.precisions
            and peer in args.peers
        ]
    if "ours" in args.peers and args.memory_rows:
        memory = [dict(r, config="tiny") if args.dry_run else r for r in MEMORY_ROWS]
        keep = dict(config=args.configs, phase=args.phases, precision=args.precisions)
        if not args.dry_run:
            memory = [r for r in memory if all(r[k] in v for k, v in keep.items())]
        at = len(rows) if args.dry_run else min(2, len(rows))
        rows[at:at] = memory
    shapes = DRY_SHAPES if args.dry_run else SHAPES
    chosen = []
    for row in rows:
        if ("on" if row["xla"] else "off") in args.xla:
            seq, preds, batch = shapes[(row["config"], row["phase"])]
            if row["peer"] in ("ours_auto", "ours_auto_ckpt"):
                batch = MEMORY_BATCH
            chosen.append(dict(row, seq=seq, preds=preds, batch=batch, status="pending"))
    return chosen


def add_data(rows, args, work_dir):
    """Gives each row its command line: one TFRecord file per (seq, preds), written by the
    first row that reads it, outside its timed window; the batch is the global one."""
    for row in rows:
        key = (row["seq"], row["preds"])
        biggest = max(r["batch"] for r in rows if (r["seq"], r["preds"]) == key)
        count = 64 if args.dry_run else max(512, 4 * biggest * max(args.num_gpus, 1))
        # The memory rows run on one GPU, their batch the global one.
        one = row["peer"].startswith("ours_auto")
        cli = ["--strategy", "one_device" if one else "mirrored"]
        cli += ["--config", row["config"], "--seq", str(row["seq"])]
        cli += ["--batch", str(row["batch"] * (1 if one else max(args.num_gpus, 1)))]
        cli += ["--preds", str(row["preds"]), "--precision", row["precision"]]
        cli += ["--data", os.path.join(work_dir, f"data_{key[0]}_{key[1]}.tfrecord")]
        cli += ["--records", str(count), "--steps", str(args.steps), "--warmup", str(args.warmup)]
        cli += ["--iterations_per_loop", str(args.iterations_per_loop)]
        cli += ["--accumulation", "auto"] if row["peer"].startswith("ours_auto") else []
        cli += ["--gradient_checkpointing"] if row["peer"] == "ours_auto_ckpt" else []
        row["cli"] = cli + (["--xla"] if row["xla"] else [])


def run_row(row, timeout):
    """Measures one row in a process of its own; its figures or its error go into `row`."""
    peer = next(p for p in pretraining_loop.peers(None) if p.name == LOOP_PEERS[row["peer"]])
    start = time.monotonic()
    try:
        measured = harness.run_measurement(pretraining_loop.__name__, row["cli"], peer, timeout)
        row.update(measured, status="ok")
    except subprocess.TimeoutExpired:
        row.update(status="error", error=f"timeout after {timeout:.0f} s", oom=False)
    except RuntimeError as error:
        text = str(error)
        oom = any(marker in text for marker in OOM_MARKERS)
        row.update(status="error", error=_last_line(text), oom=oom)
    row["wall_s"] = time.monotonic() - start


def run_rows(rows, args, deadline, save):
    """Runs every row within the budget (see the module docstring); `save()` after each."""
    pending = list(range(len(rows)))
    walls = {}  # (config, phase) -> the longest wall time of one such row so far
    while pending:
        index = pending.pop(0)
        row = rows[index]
        key = (row["config"], row["phase"])
        estimate = walls.get(key, max(walls.values(), default=0.0))
        remaining = deadline - time.monotonic()
        if remaining <= 0 or estimate > remaining:
            row["status"] = "skipped (budget)"
            save()
            continue
        run_row(row, min(remaining, args.row_timeout_s))
        walls[key] = max(walls.get(key, 0.0), row["wall_s"])
        finish_row(row, args.peak_tflops)
        print(_progress(row), flush=True)
        if row.get("oom") and not row.get("retried") and row["batch"] > 1:
            # Out of memory: once more at half the batch, as the next row to run.
            row.update(retried=True, note=f"batch halved after OOM (was {row['batch']})")
            row["batch"] //= 2
            cli = row["cli"]
            cli[cli.index("--batch") + 1] = str(row["batch"] * max(args.num_gpus, 1))
            row.pop("error", None)
            pending.insert(0, index)
        save()


def finish_row(row, peak_tflops):
    """Adds the per-GPU figures and MFU to a measured row."""
    if row["status"] != "ok":
        return
    row["seq_per_s"] = row["examples_per_s"]
    row["seq_per_s_per_gpu"] = row["examples_per_s_per_replica"]
    row["tflops_per_gpu"] = row["tflops_per_replica"]
    row["mfu"] = row["tflops_per_gpu"] / peak_tflops
    peak = row.get("peak_memory_bytes")
    row["peak_memory_gib"] = None if peak is None else peak / 2**30
    if row["peer"].startswith("ours_auto"):
        row["note"] = f"auto: {row.get('accumulation')} micro-batches"


def _progress(row):
    """The line that says how a row ended."""
    xla = "+XLA" if row["xla"] else ""
    what = f"{row['config']} phase {row['phase']} {row['precision']}{xla} {row['peer']}"
    if row["status"] == "error":
        return f"  {what}: error: {row.get('error', '')}"
    note = f" ({row['note']})" if row.get("note") else ""
    return f"  {what}: {row['seq_per_s_per_gpu']:.1f} seq/s per GPU{note}"


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def table(rows, args):
    """The results as one Markdown table, with its notes."""
    measured = {
        (r["config"], r["phase"], r["precision"], r["xla"], r["peer"]): r
        for r in rows
        if r["status"] == "ok"
    }
    cells = []
    for r in rows:
        ok = r["status"] == "ok"
        peer = measured.get((r["config"], r["phase"], r["precision"], r["xla"], "model_garden"))
        ratio = None
        if ok and r["peer"] == "ours" and peer:
            ratio = r["seq_per_s_per_gpu"] / peer["seq_per_s_per_gpu"]
        status = r["status"] + (f", {r['note']}" if r.get("note") else "")
        if r["status"] == "error":
            status = "error: " + r.get("error", "")[:80]
        figures = [("seq_per_s_per_gpu", ",.1f"), ("tflops_per_gpu", ".1f"), ("mfu", ".1%")]
        figures += [("ratio", ".2f"), ("peak_memory_gib", ".1f"), ("first_call_s", ".0f")]
        found = {**r, "ratio": ratio} if ok else {}
        cells.append(
            [r["config"], r["phase"], r["seq"], r["precision"], "yes" if r["xla"] else "no"]
            + [r["peer"], r["batch"], *(_fmt(found.get(k), spec) for k, spec in figures), status]
        )
    header = ["model", "phase", "seq", "precision", "XLA", "peer", "batch/GPU", "seq/s/GPU"]
    header += ["TFLOP/s/GPU", "MFU", "ours/MG", "peak GiB", "1st call s", "status"]
    lines = [harness.table(header, cells)]
    lines.append("")
    lines.append(
        f"MFU: model TFLOP/s per GPU over {args.peak_tflops:g} TFLOP/s (--peak_tflops, the dense "
        "bf16 peak) for every precision, so float32 rows are against the bf16 peak too; float32 "
        "is TensorFlow's default (TensorFloat-32 matmuls on Ampere and later)."
    )
    lines.append(
        f"Anchors, BERT-large phase 1: NVIDIA's TF2 BERT on an A100 about "
        f"{NVIDIA_A100_SEQ_PER_S} seq/s per GPU; this project's goal on an H200 "
        f"{GOAL_SEQ_PER_S:,} seq/s per GPU (45% MFU)."
    )
    headline = measured.get(("large", 1, "mixed_bfloat16", True, "ours"))
    if headline:
        verdict = "met" if headline["seq_per_s_per_gpu"] >= GOAL_SEQ_PER_S else "not met"
        lines.append(
            f"Headline: {headline['seq_per_s_per_gpu']:,.0f} seq/s per GPU on "
            f"{headline.get('device', '?')}, goal {verdict}."
        )
    if args.dry_run:
        lines.append("Dry run: CPU, tiny model; the figures only show that every path runs.")
    return "\n".join(lines)


def _run(argv, timeout):
    """(stdout, stderr, failure or None) of `python *argv`, run from the repository root."""
    try:
        return *harness.run([sys.executable, *argv], timeout=timeout)[2:], None
    except subprocess.TimeoutExpired:
        return "", "", f"timeout after {timeout:.0f} s"
    except RuntimeError as error:
        return "", str(error), "failed"


def _last_line(text):
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def run_checks(args, work_dir, deadline):
    """The correctness part, in its own process; returns (checks, devices)."""
    out = os.path.join(work_dir, "checks.json")
    argv = ["-m", "benchmarks.accelerator_correctness", "--out", out]
    timeout = max(min(deadline - time.monotonic(), args.checks_timeout_s), 1)
    _, err, failure = _run(argv + ["--mixed_steps", str(args.mixed_steps)], timeout)
    if failure or not os.path.exists(out):
        detail = f"correctness process {failure}: {_last_line(err)}"
        return [{"name": "correctness", "passed": False, "detail": detail}], []
    with open(out) as f:
        result = json.load(f)
    return result["checks"], result["devices"]


def gpu_names():
    """Names of the GPUs TensorFlow sees, from a process of their own (this one keeps none)."""
    code = "import json, tensorflow as tf; "
    code += "print(json.dumps([d.name for d in tf.config.list_physical_devices('GPU')]))"
    out, _, failure = _run(["-c", code], 120)
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
    parser.add_argument("--memory_rows", type=int, default=1, help="0: no auto rows.")
    parser.add_argument("--checks_only", action="store_true")
    parser.add_argument("--peak_tflops", type=float, default=989.0, help="Dense bf16 peak/GPU.")
    parser.add_argument("--warmup", type=int, default=None, help="Untimed steps (default 10).")
    parser.add_argument("--steps", type=int, default=None, help="Timed steps (default 20).")
    parser.add_argument("--iterations_per_loop", type=int, default=None, help="Default 10.")
    parser.add_argument("--mixed_steps", type=int, default=None, help="Steps of the curves.")
    args = parser.parse_args(argv)
    # Dry-run defaults: 2 untimed and 2 timed steps, one step per call, shorter curves.
    for name, full, dry in (
        ("warmup", 10, 2),
        ("steps", 20, 2),
        ("iterations_per_loop", 10, 1),
        ("mixed_steps", 200, 40),
    ):
        if getattr(args, name) is None:
            setattr(args, name, dry if args.dry_run else full)
    args.configs, args.peers = args.configs.split(","), args.peers.split(",")
    args.phases = [int(p) for p in args.phases.split(",")]
    args.precisions, args.xla = args.precisions.split(","), args.xla.split(",")
    return args


def _set_environment(dry_run):
    """The environment every process of the check inherits."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.pop("TF_USE_LEGACY_KERAS", None)  # only Model Garden's rows run on tf_keras
    if dry_run:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        # XLA's CPU compiler without LLVM optimisation: the dry run's compiles take about
        # two thirds of the time, and its figures are not measurements anyway.
        flags = os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0"
        os.environ["XLA_FLAGS"] = flags.strip()
    elif os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        print("CUDA_VISIBLE_DEVICES is empty, which hides every GPU: unset for this check.")
        del os.environ["CUDA_VISIBLE_DEVICES"]


def main():
    args = parse_args()
    deadline = time.monotonic() + args.budget_s
    started = time.time()
    _set_environment(args.dry_run)
    result = {"meta": {"machine": harness.machine()}, "checks": [], "rows": []}

    def save():
        meta = result["meta"]
        meta.update(dry_run=args.dry_run, budget_s=args.budget_s, peak_tflops=args.peak_tflops)
        meta.update(warmup=args.warmup, steps=args.steps, ipl=args.iterations_per_loop)
        meta.update(elapsed_s=time.time() - started, num_gpus=getattr(args, "num_gpus", None))
        devices = {r["device"] for r in result["rows"] if r.get("device")}
        meta["device"] = ", ".join(sorted(devices)) or None
        with open_atomically(args.out) as f:
            json.dump(result, f, indent=1)

    with tempfile.TemporaryDirectory(prefix="accelerator_check_") as work_dir:
        devices = []
        if not args.skip_checks:
            print("Correctness on this machine's devices:", flush=True)
            checks_start = time.time()
            result["checks"], devices = run_checks(args, work_dir, deadline)
            result["meta"]["checks_s"] = time.time() - checks_start
            for check in result["checks"]:
                verdict = "PASS" if check["passed"] else "FAIL"
                print(f"  {verdict} {check['name']}: {check['detail']}", flush=True)
            save()
        if not devices and not args.dry_run:
            devices = gpu_names()
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
            run_rows(rows, args, deadline, save)
    print()
    print(table(result["rows"], args))
    save()
    print(f"\nWrote {args.out}")
    failed = [c for c in result["checks"] if not c["passed"]]
    failed += [r for r in result["rows"] if r["status"] == "error"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
