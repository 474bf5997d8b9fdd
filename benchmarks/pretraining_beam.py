"""create_pretraining_data: the fast mode against the same work as an Apache Beam pipeline
(`beam_1`, `beam_2` in the interpreter of `--beam_python`), and `plan`, the pipeline's one
sequential step; see benchmarks/README.md ("On Apache Beam").

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim
    python -m benchmarks.pretraining_beam --wheel /tmp/gensim/gensim-4.4.0-*.whl --scale 4 \
        --beam_python .venv-beam/bin/python --rounds 3
"""

import os
import sys

from benchmarks import harness, pretraining_data
from benchmarks.corpus import add_corpus_arguments, check_corpus_arguments


def measure(args, peer):
    if peer.name != "plan":
        return pretraining_data.measure(args, peer, args.files, args.outputs)
    import tempfile

    from data.pretraining import fast

    with tempfile.TemporaryDirectory() as work:
        paths = pretraining_data.write_corpus(args, work, args.files)
        corpus_mb = sum(os.path.getsize(path) for path in paths) / 1e6
        clock = harness.Clock()
        shards = sum(1 for _ in fast.iter_shard_spans(paths))
        wall, cpu = clock.elapsed()
    result = {"wall_s": wall, "cpu_s": cpu, "shards": shards}
    return {**result, "mb_per_s": corpus_mb / wall, "corpus_mb": corpus_mb}


def peers(args):
    check_corpus_arguments(args)
    if not (args.beam_python and os.path.isfile(args.beam_python)):
        sys.exit("--beam_python: the interpreter of requirements-beam.txt's environment.")
    env = {"CUDA_VISIBLE_DEVICES": ""}
    beam, script = os.path.abspath(args.beam_python), "create_pretraining_data.py"
    beam_2 = ["--beam", "--num_workers=2"]
    return [
        harness.Peer("fast", env=env, options={"script": [script, "--num_workers=2"]}),
        harness.Peer("beam_1", env=env, options={"python": beam, "script": [script, "--beam"]}),
        harness.Peer("beam_2", env=env, options={"python": beam, "script": [script, *beam_2]}),
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
