"""create_pretraining_data: the original (`original`) against this project's `faithful` and
`fast` modes on the Wikipedia excerpt of the gensim 4.4.0 wheel; wall and CPU time, peak
memory. See benchmarks/README.md ("Pre-training data").

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim
    python -m benchmarks.pretraining_data --wheel /tmp/gensim/gensim-4.4.0-*.whl --rounds 3
    python -m benchmarks.pretraining_data --wheel ... --scale 16 --skip_original --only fast
"""

import hashlib
import os
import re
import resource
import sys
import tempfile

from benchmarks import harness
from benchmarks.corpus import add_corpus_arguments, check_corpus_arguments, corpus_path

FLAGS = [
    "--max_seq_length=128",
    "--max_predictions_per_seq=20",
    "--dupe_factor=5",
    "--do_lower_case=True",
    "--random_seed=12345",
]


def _tree_memory(root_pid):
    """(summed RSS, summed PSS) in bytes of a process and all its descendants."""
    parents = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                parents[int(entry)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except OSError:
            continue
    tree, frontier = {root_pid}, [root_pid]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier += children
    memory = {"Rss:": 0, "Pss:": 0}
    for pid in tree:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
                for line in rollup:
                    if line[:4] in memory:
                        memory[line[:4]] += int(line.split()[1]) * 1024
        except OSError:
            continue
    return memory["Rss:"], memory["Pss:"]


def run_and_watch(command):
    """Runs `command` (`harness.run`), sampling its process tree's memory.

    Returns:
        Wall and CPU seconds, peak RSS of its largest process, peak summed RSS and PSS of its
        tree, and the instances it reports writing.
    """
    peak = [0, 0]

    def sample(pid):
        peak[:] = map(max, peak, _tree_memory(pid))

    wall, cpu, _, log = harness.run(command, sample=sample)
    match = re.search(r"Wrote (\d+) total instances", log)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        # The largest of the waited-for children of this process: the command's processes.
        "max_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "tree_rss_mb": peak[0] / 2**20,
        "tree_pss_mb": peak[1] / 2**20,
        "instances": int(match.group(1)) if match else None,
    }


def write_corpus(args, directory, files=1):
    """Writes `--scale` copies of the corpus as `files` files `corpus_NNN.txt` in `directory`,
    cut at article ends; returns their paths."""
    with open(corpus_path(args), "rb") as f:
        articles = (f.read() * args.scale).split(b"\n\n")
    per_file, paths = -(-len(articles) // files), []
    for index in range(files):
        paths.append(os.path.join(directory, f"corpus_{index:03d}.txt"))
        with open(paths[-1], "wb") as f:
            f.write(b"\n\n".join(articles[index * per_file : (index + 1) * per_file]))
    return paths


def measure(args, peer, files=1, outputs=1):
    """create_pretraining_data (`peer.options`: its interpreter, script and flags) on `files`
    input files, writing `outputs` files, and the digest of what it wrote."""
    with tempfile.TemporaryDirectory() as work:
        corpus_mb = sum(os.path.getsize(p) for p in write_corpus(args, work, files)) / 1e6
        written = [os.path.join(work, f"out_{i}.tfrecord") for i in range(outputs)]
        command = [peer.options.get("python", sys.executable), *peer.options["script"]]
        command += [f"--input_file={work}/corpus_*.txt", f"--output_file={','.join(written)}"]
        result = run_and_watch([*command, f"--vocab_file={args.vocab_file}", *FLAGS])
        digest = hashlib.sha256()
        for path in written:
            with open(path, "rb") as f:
                digest.update(f.read())
    result.update(mb_per_s=corpus_mb / result["wall_s"], corpus_mb=corpus_mb)
    return {**result, "output_digest": digest.hexdigest()[:16]}


def peers(args):
    check_corpus_arguments(args)
    # No GPU: the script only tokenizes, and a CUDA start-up would be counted in its time.
    env = {"CUDA_VISIBLE_DEVICES": ""}
    ours = ["create_pretraining_data.py"]
    chosen = [
        harness.Peer(
            "original", env=env, options={"script": ["-m", "bert.create_pretraining_data"]}
        ),
        harness.Peer("faithful", env=env, options={"script": ours}),
        harness.Peer(
            "fast", env=env, options={"script": [*ours, f"--num_workers={args.num_workers}"]}
        ),
    ]
    return chosen[1:] if args.skip_original else chosen


def add_arguments(parser):
    add_corpus_arguments(parser)
    parser.add_argument("--scale", type=int, default=1, help="Copies of the corpus text.")
    parser.add_argument("--num_workers", type=int, default=2, help="Workers of the fast mode.")
    parser.add_argument(
        "--skip_original", action="store_true", help="Leave out the original (slow at scale)."
    )


METRICS = [
    harness.seconds("wall_s"),
    harness.seconds("cpu_s", "CPU-s"),
    harness.rate("mb_per_s", "MB/s"),
    harness.Metric("max_rss_mb", "MB", False),
    harness.Metric("tree_pss_mb", "MB", False),
]

if __name__ == "__main__":
    harness.main(__spec__.name)
