"""Small learnable tasks in the files users bring: CSV / JSON Lines with named columns,
label names of their own, several labels per example."""

import csv
import json
import random

ANIMALS = ["cat", "dog", "bird"]
FILLERS = ["today", "in the garden", "near the house", "at noon", "by the river", "again"]
VERBS = ["saw", "heard", "fed", "watched", "met"]


def _animals_text(rng):
    """A sentence naming a random subset of ANIMALS (possibly none): its labels."""
    chosen = [a for a in ANIMALS if rng.random() < 0.4]
    words = list(chosen) or ["nobody"]
    rng.shuffle(words)
    subject = rng.choice(["i", "we", "my aunt", "the kids"])
    text = f"{subject} {rng.choice(VERBS)} " + " and the ".join(words) + f" {rng.choice(FILLERS)}"
    return text, chosen


def write_animals_csv(directory, num_train=240, num_dev=80, num_test=30, seed=3):
    """`train.csv`, `dev.csv` (columns `comment`, `tags` with labels as "cat,dog") and
    `test.csv` (`comment` only). Returns {split: [(text, labels), ...]}."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    sets = {}
    for split, count in (("train", num_train), ("dev", num_dev), ("test", num_test)):
        rows = [_animals_text(rng) for _ in range(count)]
        sets[split] = rows
        with open(directory / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["comment", "tags"] if split != "test" else ["comment"])
            for text, labels in rows:
                writer.writerow([text, ",".join(labels)] if split != "test" else [text])
    return sets


def write_sentiment_jsonl(directory, num_train=200, num_dev=60, num_test=20, seed=4):
    """`train.jsonl`, `dev.jsonl`, `test.jsonl` with `review` and `rating` ("pos" / "neg",
    three negatives to one positive). Returns {split: [(text, label), ...]}."""
    rng = random.Random(seed)
    good = ["wonderful", "great", "brilliant", "superb"]
    bad = ["terrible", "dull", "awful", "boring"]
    directory.mkdir(parents=True, exist_ok=True)
    sets = {}
    for split, count in (("train", num_train), ("dev", num_dev), ("test", num_test)):
        rows = []
        for _ in range(count):
            label = "pos" if rng.random() < 0.25 else "neg"
            word = rng.choice(good if label == "pos" else bad)
            rows.append((f"the {rng.choice(['film', 'book', 'show'])} was {word}", label))
        sets[split] = rows
        with open(directory / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for text, label in rows:
                f.write(json.dumps({"review": text, "rating": label}) + "\n")
    return sets
