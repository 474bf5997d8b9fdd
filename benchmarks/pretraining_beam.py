"""create_pretraining_data: the fast mode against the same work as an Apache Beam pipeline
(`beam_1`, `beam_2` in the interpreter of `--beam_python`), and `plan`, the pipeline's one
sequential step; see benchmarks/README.md ("On Apache Beam").

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim
    python -m benchmarks.pretraining_beam --wheel /tmp/gensim/gensim-4.4.0-*.whl --scale 4 \
        --beam_python .venv-beam/bin/python --rounds 3
"""

import hashlib
import os
import sys
import tempfile
import time

from benchmarks import harness, pretraining_data
from benchmarks.corpus import add_corpus_arguments, check_corpus_arguments, corpus_path


def _write_corpus(args, directory):
    """Writes `--scale` copies of the corpus as `--files` files cut at article ends."""
    with open(corpus_path(args), "rb") as f:
        articles = (f.read() * args.scale).split(b"\n\n")
    per_file = -(-len(articles) // args.files)
    paths = []
    for index in range(args.files):
        path = os.path.join(directory, f"corpus_{index:03d}.txt")
        with open(path, "wb") as f:
            f.write(b"\n\n".join(articles[index * per_file : (index + 1) * per_file]))
        paths.append(path)
    return paths


def _digest(paths):
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def _measure_plan(paths):
    from data.pretraining import fast

    start, cpu = time.perf_counter(), time.process_time()
    shards = sum(1 for _ in fast.iter_shard_spans(paths))
    wall = time.perf_counter() - start
    return {"wall_s": wall, "cpu_s": time.process_time() - cpu, "shards": shards}


def measure(args, peer):
    with tempfile.TemporaryDirectory() as work:
        paths = _write_corpus(args, work)
        corpus_mb = sum(os.path.getsize(path) for path in paths) / 1e6
        if peer.name == "plan":
            result = _measure_plan(paths)
        else:
            outputs = [os.path.join(work, f"out_{i}.tfrecord") for i in range(args.outputs)]
            command = [
                peer.options["python"], "create_pretraining_data.py", *peer.options["flags"],
                f"--input_file={work}/corpus_*.txt", f"--output_file={','.join(outputs)}",
                f"--vocab_file={args.vocab_file}", *pretraining_data.FLAGS,
            ]  # fmt: skip
            result = pretraining_data.run_and_watch(command)
            result["output_digest"] = _digest(outputs)
    return {**result, "mb_per_s": corpus_mb / result["wall_s"], "corpus_mb": corpus_mb}


def peers(args):
    check_corpus_arguments(args)
    if not (args.beam_python and os.path.isfile(args.beam_python)):
        sys.exit("--beam_python: the interpreter of requirements-beam.txt's environment.")
    env = {"CUDA_VISIBLE_DEVICES": ""}
    beam = os.path.abspath(args.beam_python)
    return [
        harness.Peer(
            "fast", env=env, options={"python": sys.executable, "flags": ["--num_workers=2"]}
        ),
        harness.Peer("beam_1", env=env, options={"python": beam, "flags": ["--beam"]}),
        harness.Peer(
            "beam_2", env=env, options={"python": beam, "flags": ["--beam", "--num_workers=2"]}
        ),
        harness.Peer("plan", baseline="plan", env=env),
    ]


def add_arguments(parser):
    add_corpus_arguments(parser)
    parser.add_argument("--scale", type=int, default=4, help="Copies of the corpus text.")
    parser.add_argument("--files", type=int, default=8, help="Input files the text is cut into.")
    parser.add_argument("--outputs", type=int, default=4, help="Output files.")
    parser.add_argument(
        "--beam_python",
        default=os.environ.get(
            "BERT_BEAM_PYTHON", os.path.join(harness.REPO, ".venv-beam/bin/python")
        ),
        help="Python of an environment with requirements-beam.txt (scripts/test.sh makes one).",
    )


# The same figures as the fast mode's benchmark, so the tables line up.
METRICS = pretraining_data.METRICS

if __name__ == "__main__":
    harness.main(__spec__.name)
