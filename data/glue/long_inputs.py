"""Inputs longer than `max_seq_length` for the classifier: truncated as the original, cut to
their head and tail, or read as overlapping windows whose predictions are aggregated.

`--long_inputs=truncate` is the original `convert_single_example` exactly (its records are
byte-identical). `head_tail` keeps the same number of pieces of each text, but a text that must
lose pieces loses them from its middle: its first `head_tokens` and its last ones stay (Sun et
al. 2019, "How to Fine-Tune BERT for Text Classification?", found head + tail best on IMDb).
`windows` cuts the text into windows `doc_stride` pieces apart, as run_squad cuts a context;
a sentence pair keeps `text_a` in every window, like SQuAD's question (whole, or what `text_b`
leaves it down to half the sequence), and windows over `text_b`. Training reads every window
with its example's label; evaluation and prediction aggregate the windows of each example
(`aggregate_windows`), so every metric and output file is per example.
"""

import numpy as np

from data.glue.features import (
    NUM_LOGGED,
    ClassifierFeatures,
    convert_single_example,
    label_id_of,
    log_example,
)
from data.glue.processor_base import PaddingInputExample
from data.tokenization.packing import pack_tokens, truncated_lengths
from data.windows import half_window_stride, sliding_windows
from fileio.errors import UserError

LONG_INPUTS = ("truncate", "head_tail", "windows")
WINDOW_AGGREGATIONS = ("mean", "max", "mean_logits", "vote")


def head_and_tail(tokens, keep, head_tokens=None):
    """The first `head` and the last `keep - head` of `tokens` (all of them if they fit).

    Args:
        tokens: a list of pieces.
        keep: how many to keep.
        head_tokens: pieces kept from the head; None for a quarter of `keep` (127 of 510 at
            --max_seq_length=512: Sun et al.'s 128 + 382).

    Returns:
        A new list of at most `keep` pieces.

    Graph twin: `serving.exports.long_inputs.head_and_tail_graph`.
    """
    if len(tokens) <= keep:
        return list(tokens)
    head = keep // 4 if head_tokens is None else min(head_tokens, keep)
    return tokens[:head] + tokens[len(tokens) - (keep - head) :]


def pair_room(len_a, len_b, max_seq_length):
    """Pieces of `text_a` kept in every window of a pair and the room left in each for `text_b`.

    `text_a` keeps what `text_b` leaves it and at least half the sequence (its end cut as the
    original truncates): a pair that fits, or whose `text_b` fits beside the longer half, keeps
    the original truncation's lengths in one window. Graph twin:
    `serving.exports.long_inputs.pair_room_graph`.
    """
    budget = max_seq_length - 3
    # The truncation's length of A: ceil(budget / 2) is the "longer half".
    keep_a, _ = truncated_lengths(len_a, len_b, budget)
    return keep_a, budget - keep_a


def window_pieces(tokens_a, tokens_b, max_seq_length, doc_stride=None):
    """The (A, B) pieces of each window of one example.

    Args:
        tokens_a, tokens_b: the pieces of the texts (`tokens_b` empty or None: one text).
        max_seq_length: the model's input length.
        doc_stride: pieces between window starts; None for half of the window's room.

    Returns:
        list of (pieces of A, pieces of B or None): at least one window, `[CLS] [SEP]` for an
        empty text.
    """
    if tokens_b:
        keep_a, room = pair_room(len(tokens_a), len(tokens_b), max_seq_length)
        windowed, fixed = tokens_b, tokens_a[:keep_a]
    else:
        room, windowed, fixed = max_seq_length - 2, tokens_a, None
    if room < 1:
        raise UserError(
            f"--long_inputs=windows at --max_seq_length={max_seq_length} leaves no room for a "
            "window of the text: pass at least 5 for sentence pairs (3 for single texts)."
        )
    stride = half_window_stride(room) if doc_stride is None else doc_stride
    spans = sliding_windows(len(windowed), room, stride) or [(0, 0)]
    pieces = [windowed[start : start + length] for start, length in spans]
    return [(fixed, piece) if tokens_b else (piece, None) for piece in pieces]


def convert_long_examples(
    examples,
    label_list,
    max_seq_length,
    tokenizer,
    is_regression=False,
    long_inputs="head_tail",
    head_tokens=None,
    doc_stride=None,
    log=True,
):
    """Features of `examples` cut by `head_tail` or `windows` (see the module docstring);
    the first are logged unless `log` is false (serving).

    Returns:
        (features, example_of_feature): the `ClassifierFeatures`, in order (the windows of an
        example one after another), and for each the index of its example.
    """
    features, owners = [], []
    for index, example in enumerate(examples):
        if isinstance(example, PaddingInputExample):
            features.append(
                convert_single_example(index, example, label_list, max_seq_length, None)
            )
            owners.append(index)
            continue
        label_id = label_id_of(example, label_list, is_regression)
        tokens_a = tokenizer.tokenize(example.text_a)
        tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
        if long_inputs == "head_tail":
            budget = max_seq_length - (3 if tokens_b else 2)
            keep_a, keep_b = truncated_lengths(len(tokens_a), len(tokens_b or ()), budget)
            tokens_b = tokens_b and head_and_tail(tokens_b, keep_b, head_tokens)
            pieces = [(head_and_tail(tokens_a, keep_a, head_tokens), tokens_b)]
        else:
            pieces = window_pieces(tokens_a, tokens_b, max_seq_length, doc_stride)
        for piece_a, piece_b in pieces:
            packed = pack_tokens(
                list(piece_a), piece_b and list(piece_b), max_seq_length,
                tokenizer.convert_tokens_to_ids,
            )  # fmt: skip
            if log and len(features) < NUM_LOGGED:
                log_example(example, packed, label_id)
            features.append(
                ClassifierFeatures(
                    packed.input_ids, packed.input_mask, packed.segment_ids, label_id
                )
            )
            owners.append(index)
    return features, owners


def _softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


def aggregate_windows(logits, example_of_window, num_examples, how="mean", is_regression=False):
    """The predictions of each example from those of its windows.

    Classification, from the windows' logits `[W, C]`:
      * `mean`: the mean of the windows' probabilities;
      * `max`: each class's highest probability over the windows, renormalised to sum to 1;
      * `mean_logits`: the softmax of the mean of the logits;
      * `vote`: the share of windows whose most probable class each class is, plus the mean
        probability over 2n for n windows (which breaks ties and never a majority), over
        1 + 1 / 2n.
    Regression (one output per window): the mean, or the maximum for `max`.

    Args:
        logits: float array `[W, C]` (`[W, 1]` or `[W]` for regression).
        example_of_window: int array `[W]`, each window's example (every example has one).
        num_examples: E.
        how: one of `WINDOW_AGGREGATIONS`.
        is_regression: one output per window.

    Returns:
        float32 array: `[E, C]` probabilities (the vote shares for `vote`), or `[E]` scores.

    Graph twin: `serving.exports.long_inputs.aggregate_windows_graph`.
    """
    owners = np.asarray(example_of_window, np.int64)
    counts = np.bincount(owners, minlength=num_examples).astype(np.float64)
    if (counts == 0).any():
        raise ValueError(f"Example {int(np.argmin(counts))} has no window to aggregate.")
    logits = np.asarray(logits, np.float64)
    if is_regression:
        scores = logits.reshape(len(owners))
        if how == "max":
            best = np.full(num_examples, -np.inf)
            np.maximum.at(best, owners, scores)
            return best.astype(np.float32)
        return (np.bincount(owners, scores, num_examples) / counts).astype(np.float32)

    def per_example_mean(values):
        sums = np.zeros((num_examples, values.shape[1]))
        np.add.at(sums, owners, values)
        return sums / counts[:, None]

    probabilities = _softmax(logits)
    if how == "mean":
        result = per_example_mean(probabilities)
    elif how == "mean_logits":
        result = _softmax(per_example_mean(logits))
    elif how == "max":
        result = np.zeros((num_examples, logits.shape[1]))
        np.maximum.at(result, owners, probabilities)
        result /= result.sum(axis=1, keepdims=True)
    elif how == "vote":
        votes = np.eye(logits.shape[1])[np.argmax(probabilities, axis=1)]
        # Shares differ by at least 1 / n (n windows); the mean probability, weighted by
        # 1 / (2n), breaks ties without changing a majority. The sum stays 1.
        weight = 1.0 / (2.0 * counts[:, None])
        result = (per_example_mean(votes) + weight * per_example_mean(probabilities)) / (1 + weight)
    else:
        raise ValueError(f"Unknown window aggregation {how!r}; use one of {WINDOW_AGGREGATIONS}.")
    return result.astype(np.float32)
