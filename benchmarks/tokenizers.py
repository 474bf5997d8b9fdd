"""Tokenization: the original, ours, tensorflow-text and Hugging Face tokenizers on the
Wikipedia excerpt of the gensim 4.4.0 wheel, the ids checked against the original's; see
benchmarks/README.md ("Tokenizers").

    python -m benchmarks.tokenizers --wheel /tmp/gensim/gensim-4.4.0-*.whl --rounds 5
"""

import hashlib
import os
import tempfile
import time

from benchmarks import harness
from benchmarks.corpus import add_corpus_arguments, check_corpus_arguments, corpus_path
from fileio.atomic import atomic_output


def _tokenizer(peer, vocab_file, lines, batches, result):
    """Imports and builds `peer`'s tokenizer, timing both (and the first call of the batched
    peers); returns (a run over the corpus, its output -> a list of ids per line)."""
    start = time.perf_counter()
    if peer in ("original", "ours"):
        if peer == "original":
            from absl import flags
            from bert import tokenization

            # The original reads FLAGS.preserve_unused_tokens (default False) on every word.
            flags.FLAGS.mark_as_parsed()
        else:
            from data.tokenization import full_tokenizer as tokenization
        result["import_s"] = time.perf_counter() - start
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
        result["build_s"] = time.perf_counter() - start - result["import_s"]

        def encode(line):
            return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))

        return lambda: [encode(line) for line in lines], lambda out: out
    if peer == "fast":
        import tensorflow as tf

        from data.tokenization import fast_tokenizer

        result["import_s"] = time.perf_counter() - start
        tokenizer = fast_tokenizer.FastFullTokenizer(vocab_file, do_lower_case=True)
        result["build_s"] = time.perf_counter() - start - result["import_s"]
        tokenize = tf.function(
            tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)]
        )
        inputs = [tf.constant(batch) for batch in batches]
        call = lambda: [tokenize(t) for t in inputs]  # noqa: E731
        to_lists = lambda out: [row for r in out for row in r.to_list()]  # noqa: E731
        first = lambda: tokenize(inputs[0])  # noqa: E731
    else:
        from tokenizers import BertWordPieceTokenizer

        result["import_s"] = time.perf_counter() - start
        tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=True)
        result["build_s"] = time.perf_counter() - start - result["import_s"]
        # Rust `Encoding`s; reading `.ids` out is not timed, as fast's ids stay in tensors too.
        encode = lambda batch: tokenizer.encode_batch(batch, add_special_tokens=False)  # noqa: E731
        call = lambda: [encode(b) for b in batches]  # noqa: E731
        to_lists = lambda out: [e.ids for encodings in out for e in encodings]  # noqa: E731
        first = lambda: encode(batches[0])  # noqa: E731
    start = time.perf_counter()
    first()
    result["first_call_s"] = time.perf_counter() - start
    return call, to_lists


def compare_ids(ids, reference, lines, vocab_file):
    """How many lines, and token positions, of `ids` differ from the original's `reference`
    (a position differs where the ids at one index do, plus the difference in length); the
    first three differing lines, as tokens around the first difference."""
    bad = [i for i, (a, b) in enumerate(zip(reference, ids, strict=True)) if a != b]
    positions = sum(
        sum(x != y for x, y in zip(reference[i], ids[i], strict=False))
        + abs(len(reference[i]) - len(ids[i]))
        for i in bad
    )
    with open(vocab_file, encoding="utf-8") as f:
        tokens = f.read().split("\n")
    examples = []
    for i in bad[:3]:
        a, b = reference[i], ids[i]
        k = next(
            (n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        around = slice(max(0, k - 3), k + 4)
        examples.append(
            {
                "line": lines[i][:80],
                "original": [tokens[j] for j in a[around]],
                "peer": [tokens[j] for j in b[around]],
            }
        )
    return {
        "lines_differing_pct": 100 * len(bad) / len(lines),
        "lines_differing": len(bad),
        "token_positions_differing": positions,
        "first_differences": examples,
    }


def measure(args, peer):
    import numpy as np

    with open(corpus_path(args), encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line.strip()]
    batches = [lines[i : i + args.batch_size] for i in range(0, len(lines), args.batch_size)]
    result = {"lines": len(lines), "bytes": sum(len(s.encode()) for s in lines)}
    run, to_lists = _tokenizer(peer.name, args.vocab_file, lines, batches, result)
    clock = harness.Clock()
    out = run()
    result["timed_s"], result["cpu_s"] = clock.elapsed()
    ids = to_lists(out)
    result["tokens"] = sum(len(row) for row in ids)
    result["mb_per_s"] = result["bytes"] / 1e6 / result["timed_s"]
    result["mb_per_cpu_s"] = result["bytes"] / 1e6 / result["cpu_s"]
    result["tokens_per_s"] = result["tokens"] / result["timed_s"]
    result["cpu_per_wall"] = result["cpu_s"] / result["timed_s"]
    # The original's ids, kept once per corpus and vocabulary, for the other peers to match.
    key = hashlib.sha1("\n".join(lines).encode())
    with open(args.vocab_file, "rb") as f:
        key.update(f.read())
    reference = os.path.join(
        tempfile.gettempdir(), f"bench_original_ids_{key.hexdigest()[:12]}.npz"
    )
    if peer.name == "original" and not os.path.exists(reference):
        lengths = np.array([len(row) for row in ids], np.int64)
        values = np.array([i for row in ids for i in row], np.int64)
        with atomic_output(reference) as temp:
            np.savez(temp, lengths=lengths, values=values)
    elif peer.name != "original" and os.path.exists(reference):
        data = np.load(reference)
        rows = np.split(data["values"], np.cumsum(data["lengths"])[:-1])
        result.update(compare_ids(ids, [r.tolist() for r in rows], lines, args.vocab_file))
    return result


def peers(args):
    check_corpus_arguments(args)
    # No GPU: the fast peer's ops are CPU ops, and a CUDA start-up would only add noise.
    env = {"CUDA_VISIBLE_DEVICES": ""}
    return [
        harness.Peer("original", env=env),
        harness.Peer("ours", env=env),
        harness.Peer("fast", "hf", env=env),
        harness.Peer("hf", env=env),
    ]


def add_arguments(parser):
    add_corpus_arguments(parser)
    parser.add_argument("--batch_size", type=int, default=1024, help="Lines per fast/hf call.")


METRICS = [
    harness.rate("mb_per_s", "MB/s"),
    harness.rate("tokens_per_s", "tokens/s"),
    harness.rate("mb_per_cpu_s", "MB/CPU-s"),
    harness.Metric("cpu_per_wall", "cores", False),
    harness.seconds("import_s"),
    harness.seconds("build_s"),
    harness.seconds("first_call_s"),
]

if __name__ == "__main__":
    harness.main(__spec__.name)
