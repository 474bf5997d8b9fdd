"""Small learnable tasks written in the official GLUE file formats (SST-2, MRPC, STS-B)."""

import random

# The sentiment task's words: one home with the benchmarks' tiny SST-2.
from benchmarks.tiny_fixtures import BAD, FRAMES, GOOD, NOUNS

PLACES = ["market", "station", "river", "school", "office", "garden", "museum", "harbor"]
PEOPLE = ["the man", "a woman", "the teacher", "my friend", "the driver", "a child"]


def _sentiment(rng):
    label = rng.randint(0, 1)
    adjective = rng.choice(GOOD if label else BAD)
    return rng.choice(FRAMES).format(n=rng.choice(NOUNS), a=adjective), label


def write_sst2(directory, num_train=400, num_dev=100, num_test=50, seed=0):
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for name, count in (("train", num_train), ("dev", num_dev)):
        rows = [_sentiment(rng) for _ in range(count)]
        text = "sentence\tlabel\n" + "".join(f"{s}\t{label}\n" for s, label in rows)
        (directory / f"{name}.tsv").write_text(text)
    tests = [_sentiment(rng)[0] for _ in range(num_test)]
    (directory / "test.tsv").write_text(
        "index\tsentence\n" + "".join(f"{i}\t{s}\n" for i, s in enumerate(tests))
    )


def _pair(rng):
    person, place = rng.choice(PEOPLE), rng.choice(PLACES)
    first = f"{person} went to the {place} yesterday ."
    label = rng.randint(0, 1)
    if label:
        second = f"yesterday {person} walked to the {place} ."
    else:
        other = rng.choice([p for p in PLACES if p != place])
        second = f"yesterday {person} walked to the {other} ."
    return first, second, label


def write_mrpc(directory, num_train=400, num_dev=100, num_test=50, seed=1):
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    for name, count in (("train", num_train), ("dev", num_dev)):
        rows = [_pair(rng) for _ in range(count)]
        (directory / f"{name}.tsv").write_text(
            header
            + "".join(f"{label}\t{i}\t{i + 1}\t{a}\t{b}\n" for i, (a, b, label) in enumerate(rows))
        )
    rows = [_pair(rng) for _ in range(num_test)]
    (directory / "test.tsv").write_text(
        "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        + "".join(f"{i}\t{i}\t{i + 1}\t{a}\t{b}\n" for i, (a, b, _) in enumerate(rows))
    )


def _similarity(rng):
    person, place = rng.choice(PEOPLE), rng.choice(PLACES)
    first = f"{person} is at the {place} ."
    kind = rng.randint(0, 2)
    if kind == 2:
        return first, f"{person} is standing at the {place} .", 5.0
    if kind == 1:
        other = rng.choice([p for p in PEOPLE if p != person])
        return first, f"{other} is standing at the {place} .", 2.5
    other_person = rng.choice([p for p in PEOPLE if p != person])
    other_place = rng.choice([p for p in PLACES if p != place])
    return first, f"{other_person} is sleeping near the {other_place} .", 0.0


def write_stsb(directory, num_train=400, num_dev=100, num_test=50, seed=2):
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    head = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
    for name, count in (("train", num_train), ("dev", num_dev)):
        rows = [_similarity(rng) for _ in range(count)]
        (directory / f"{name}.tsv").write_text(
            head
            + "\tscore\n"
            + "".join(
                f"{i}\tmain\tgen\t2024\t{i:04d}\tnone\tnone\t{a}\t{b}\t{s:.3f}\n"
                for i, (a, b, s) in enumerate(rows)
            )
        )
    rows = [_similarity(rng) for _ in range(num_test)]
    (directory / "test.tsv").write_text(
        head
        + "\n"
        + "".join(
            f"{i}\tmain\tgen\t2024\t{i:04d}\tnone\tnone\t{a}\t{b}\n"
            for i, (a, b, _) in enumerate(rows)
        )
    )


if __name__ == "__main__":
    # python -m tests.helpers.glue_tasks DIR: a toy SST-2 task (used by scripts/demo.sh).
    import pathlib
    import sys

    write_sst2(pathlib.Path(sys.argv[1]), num_train=320, num_dev=96, num_test=40)
