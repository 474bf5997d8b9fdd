"""Entity-level precision, recall and F1 exactly as conlleval.pl (CoNLL-2000/2003) counts them.

An entity (chunk) counts as correct only if its type and both boundaries match. Chunks start
and end by conlleval's rules, so IOB1 and IOB2 files score alike and an ill-formed predicted
`I-X` after `O` opens a new chunk, as conlleval does. Sentences are scored as if separated by
conlleval's boundary line, so no chunk spans two sentences. Token accuracy is over words (the
`-DOCSTART-` lines conlleval.pl also counts are not words).
"""

import collections
import dataclasses

from data.ner.conll import split_tag


def _chunk_ends(previous, current):
    """Whether a chunk ends between two (prefix, type) tags, by conlleval's endOfChunk."""
    (prev_tag, prev_type), (tag, chunk_type) = previous, current
    if (prev_tag, tag) in {
        ("B", "B"),
        ("B", "O"),
        ("I", "B"),
        ("I", "O"),
        ("E", "E"),
        ("E", "I"),
        ("E", "O"),
    }:
        return True
    if prev_tag not in ("O", ".") and prev_type != chunk_type:
        return True
    return prev_tag in ("[", "]")


def _chunk_starts(previous, current):
    """Whether a chunk starts at `current` after `previous`, by conlleval's startOfChunk."""
    (prev_tag, prev_type), (tag, chunk_type) = previous, current
    if (prev_tag, tag) in {
        ("B", "B"),
        ("I", "B"),
        ("O", "B"),
        ("O", "I"),
        ("E", "E"),
        ("E", "I"),
        ("O", "E"),
    }:
        return True
    if tag not in ("O", ".") and prev_type != chunk_type:
        return True
    return tag in ("[", "]")


@dataclasses.dataclass
class ChunkCounts:
    """conlleval's counters: chunks in the gold data, predicted, and correct (per type too)."""

    gold: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    predicted: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    correct: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    tokens: int = 0
    correct_tags: int = 0


def count_chunks(gold_sequences, predicted_sequences):
    """Counts chunks over sentences the way conlleval.pl reads a file of them.

    Args:
        gold_sequences: list of tag lists, one per sentence.
        predicted_sequences: list of tag lists of the same lengths.

    Returns:
        `ChunkCounts`.
    """
    counts = ChunkCounts()
    boundary = ("O", "")
    last_gold = last_guess = boundary
    in_correct = False
    pairs = []
    for gold_tags, predicted_tags in zip(gold_sequences, predicted_sequences, strict=True):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"{len(predicted_tags)} predicted tags for {len(gold_tags)} words.")
        pairs.extend(
            (split_tag(g), split_tag(p)) for g, p in zip(gold_tags, predicted_tags, strict=True)
        )
        pairs.append(None)  # the blank line after each sentence
    for pair in pairs:
        gold, guess = (boundary, boundary) if pair is None else pair
        gold_ends = _chunk_ends(last_gold, gold)
        guess_ends = _chunk_ends(last_guess, guess)
        if in_correct:
            if gold_ends and guess_ends and last_guess[1] == last_gold[1]:
                in_correct = False
                counts.correct[last_gold[1]] += 1
            elif gold_ends != guess_ends or guess[1] != gold[1]:
                in_correct = False
        gold_starts = _chunk_starts(last_gold, gold)
        guess_starts = _chunk_starts(last_guess, guess)
        if gold_starts and guess_starts and guess[1] == gold[1]:
            in_correct = True
        if gold_starts:
            counts.gold[gold[1]] += 1
        if guess_starts:
            counts.predicted[guess[1]] += 1
        if pair is not None:
            counts.tokens += 1
            counts.correct_tags += gold == guess
        last_gold, last_guess = gold, guess
    if in_correct:
        counts.correct[last_gold[1]] += 1
    return counts


def _precision_recall_f1(correct, predicted, gold):
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def entity_scores(gold_sequences, predicted_sequences):
    """Entity-level scores (fractions, not percent) and token accuracy.

    Args:
        gold_sequences: list of gold tag lists, one per sentence (IOB1 or IOB2).
        predicted_sequences: list of predicted tag lists of the same lengths.

    Returns:
        dict with `precision`, `recall`, `f1`, `accuracy` and, per entity type T (sorted),
        `f1_T`.
    """
    counts = count_chunks(gold_sequences, predicted_sequences)
    precision, recall, f1 = _precision_recall_f1(
        sum(counts.correct.values()), sum(counts.predicted.values()), sum(counts.gold.values())
    )
    scores = {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "accuracy": counts.correct_tags / counts.tokens if counts.tokens else 0.0,
    }
    for chunk_type in sorted(set(counts.gold) | set(counts.predicted)):
        if chunk_type:
            scores[f"f1_{chunk_type}"] = _precision_recall_f1(
                counts.correct[chunk_type],
                counts.predicted[chunk_type],
                counts.gold[chunk_type],
            )[2]
    return scores
