"""extract_features.py's output formats: the original JSON against per-token and pooled npy,
on Wikipedia lines of the gensim 4.4.0 wheel; see benchmarks/README.md ("extract_features
output formats").

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim
    python -m benchmarks.extraction_formats --wheel /tmp/gensim/gensim-4.4.0-*.whl \
        --config base --lines 2000 --rounds 2
"""

import glob
import os
import shutil
import tempfile
import time

from benchmarks import harness
from benchmarks.common import CONFIGS, bert_config, random_encoder_checkpoint
from benchmarks.corpus import add_corpus_arguments, check_corpus_arguments, corpus_lines
from fileio.atomic import open_atomically

_PEERS = {
    "json": dict(output_format="jsonl", suffix=".jsonl"),
    "npy_tokens": dict(output_format="npy", suffix=".npy"),
    "npy_pooled": dict(output_format="npy", pooling="mean", suffix=".npy"),
    "npy_pooled_fp16": dict(
        output_format="npy", pooling="mean", output_dtype="float16", suffix=".npy"
    ),
}

METRICS = [
    harness.rate("lines_per_s", "lines/s"),
    harness.Metric("bytes_per_line", "bytes/line", higher_is_better=False),
]


def _input_file(args):
    """The first `--lines` non-empty sentences of the corpus, written once per count."""
    path = os.path.join(args.work_dir, f"wiki_{args.lines}.txt")
    if not os.path.exists(path):
        os.makedirs(args.work_dir, exist_ok=True)
        lines = corpus_lines(args, args.lines)
        with open_atomically(path) as f:
            f.write("\n".join(lines) + "\n")
    return path


def measure(args, peer):
    from data.tokenization.full_tokenizer import FullTokenizer
    from jobs.extraction_run import ExtractionRun, extract_features
    from training.strategy import create_strategy

    check_corpus_arguments(args)
    input_file = _input_file(args)
    config = bert_config(args.config)
    prefix = random_encoder_checkpoint(args.work_dir, args.config, config, args.seed)
    options = dict(peer.options)
    out_dir = tempfile.mkdtemp(prefix="extraction_formats_", dir=args.work_dir)
    output_file = os.path.join(out_dir, "out" + options.pop("suffix"))
    run = ExtractionRun(
        input_file=input_file,
        output_file=output_file,
        init_checkpoint=prefix,
        layers=[int(x) for x in args.layers.split(",")],
        max_seq_length=args.seq,
        batch_size=args.batch,
        jit_compile=False,
        pad_to_max_seq_length=False,
        **options,
    )
    tokenizer = FullTokenizer(args.vocab_file, do_lower_case=True)
    start = time.perf_counter()
    lines = extract_features(run, config, tokenizer, create_strategy("one_device"))
    seconds = time.perf_counter() - start
    written = sum(os.path.getsize(p) for p in glob.glob(os.path.join(out_dir, "*")))
    shutil.rmtree(out_dir)
    return {
        "lines": lines,
        "seconds": seconds,
        "lines_per_s": lines / seconds,
        "bytes_per_line": written / lines,
    }


def peers(args):
    del args
    return [harness.Peer(name, "json", options=options) for name, options in _PEERS.items()]


def add_arguments(parser):
    add = parser.add_argument
    add_corpus_arguments(parser)
    add("--config", choices=list(CONFIGS), default="base")
    add("--lines", type=int, default=2000, help="Input lines (sentences of the corpus).")
    add("--layers", default="-1,-2,-3,-4", help="--layers of every peer.")
    add("--seq", type=int, default=128, help="--max_seq_length.")
    add("--batch", type=int, default=32, help="--batch_size.")
    add("--seed", type=int, default=1)
    add("--work_dir", default=os.path.join(tempfile.gettempdir(), "extraction_formats_benchmark"))


if __name__ == "__main__":
    harness.main(__spec__.name)
