"""The top-down WordPiece learning algorithm (count thresholds over word substrings).

For a count threshold T, every substring of every word is counted (`piece` at the start of a
word, `##piece` elsewhere); longest first, a substring is kept when its count reaches T, and its
count is then subtracted from each of its prefixes so that no occurrence counts twice. Later
rounds segment the words with the pieces kept so far and count only substrings that start at
segment boundaries. Unlike the shipped tensorflow-text learner (tensorflow/text#583), only kept
substrings are subtracted, as its documentation describes. `data/vocab_builder.py` turns the
result into a vocab.txt.
"""

import collections
import math

from absl import logging

JOINER = "##"
_JOINER = JOINER


def _piece(word, start, end):
    return word[start:end] if start == 0 else _JOINER + word[start:end]


def _body_length(piece):
    """Characters of `piece` after its `##` (BasicTokenizer never leaves '#' inside a word)."""
    return len(piece) - 2 if piece.startswith(_JOINER) and len(piece) > 2 else len(piece)


def _count_substrings(words, max_chars, starts_of, allowed=None):
    """Counts the pieces of at most `max_chars` characters that start at `starts_of(word)`.

    `allowed` is closed under prefixes, so the first piece outside it ends the extension.
    """
    counts = collections.defaultdict(int)
    for word, count in words:
        length = len(word)
        for start in starts_of(word):
            for end in range(start + 1, min(length, start + max_chars) + 1):
                piece = _piece(word, start, end)
                if allowed is not None and piece not in allowed:
                    break
                counts[piece] += count
    return counts


def _select(counts, threshold):
    """Keeps pieces, longest first, whose count net of longer kept pieces reaches `threshold`."""
    # A prefix is counted wherever its extensions are, so the candidates are prefix-closed.
    net = {p: c for p, c in counts.items() if c >= threshold}
    kept = {}
    for piece in sorted(net, key=_body_length, reverse=True):
        count = net[piece]
        if count >= threshold:
            kept[piece] = count
            for end in range(len(piece) - _body_length(piece) + 1, len(piece)):
                net[piece[:end]] -= count
    return kept


def _segment_starts(vocab, max_chars):
    """Returns a function giving the starts of a word's greedy longest-match pieces."""

    def starts_of(word):
        starts, start, length = [], 0, len(word)
        while start < length:
            starts.append(start)
            end = min(length, start + max_chars)
            while end > start + 1 and _piece(word, start, end) not in vocab:
                end -= 1
            start = end
        return starts

    return starts_of


def learn_wordpieces(
    word_counts, alphabet, num_pieces, min_count=1, num_iterations=4, max_token_chars=32
):
    """Learns up to `num_pieces` words and pieces of two or more characters.

    Args:
      word_counts: Mapping word (a basic token) -> count.
      alphabet: Characters the vocabulary holds as `c` and `##c`; words with other characters
        are left out of learning.
      num_pieces: How many multi-character pieces to learn.
      min_count: Lowest count threshold.
      num_iterations: Counting/selection rounds; later rounds count from segment boundaries.
      max_token_chars: Longest piece, in characters (without `##`).

    Returns:
      `(pieces, threshold)`: `{piece: count}` of the learned multi-character pieces plus the
      `##c` pieces that reached the threshold (their count places them in the file), and the
      count threshold used.
    """
    alphabet = set(alphabet)
    words = [(w, n) for w, n in word_counts.items() if set(w) <= alphabet]
    if num_pieces <= 0 or not words:
        return {}, 0
    base = alphabet | {_JOINER + c for c in alphabet}
    raw = _count_substrings(words, max_token_chars, lambda w: range(len(w)))
    logging.info("Learning from %d words: %d distinct substrings", len(words), len(raw))

    def learn_at(threshold):
        allowed = {p for p, c in raw.items() if c >= threshold}
        kept = _select(raw, threshold)
        for _ in range(num_iterations - 1):
            starts_of = _segment_starts(base | kept.keys(), max_token_chars)
            kept = _select(_count_substrings(words, max_token_chars, starts_of, allowed), threshold)
        size = sum(_body_length(p) > 1 for p in kept)
        logging.info("Threshold %d: %d pieces (%d wanted)", threshold, size, num_pieces)
        return kept, size

    # Piece counts are roughly Zipfian, so bisect on a log scale. Fewer pieces pass a higher
    # threshold; the answer is the highest threshold that still gives num_pieces.
    low, high = max(min_count, 1), max(raw.values()) + 1
    kept = None  # The pieces learned at `low`, once computed.
    while high - low > 1:
        mid = min(max(int(math.sqrt(low * high)), low + 1), high - 1)
        pieces, size = learn_at(mid)
        if size >= num_pieces:
            low, kept = mid, pieces
        else:
            high = mid
    if kept is None:
        kept, _ = learn_at(low)
    multi = sorted((p for p in kept if _body_length(p) > 1), key=lambda p: (-kept[p], p))
    dropped = set(multi[num_pieces:]) | alphabet
    return {p: c for p, c in kept.items() if p not in dropped}, low
