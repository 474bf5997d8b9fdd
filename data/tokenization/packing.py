"""Turning tokenized text into fixed-length model inputs, as the original scripts do."""

import dataclasses

from absl import logging


@dataclasses.dataclass
class InputFeatures:
    """One padded example.

    Attributes:
        unique_id: the example's id (line number in extract_features).
        tokens: the WordPiece tokens including `[CLS]`/`[SEP]`, without padding.
        input_ids: int list of length max_seq_length, padded with 0.
        input_mask: 1 for real tokens, 0 for padding.
        segment_ids: 0 for `[CLS]`, A and the first `[SEP]`; 1 for B and the last `[SEP]`.
    """

    unique_id: int
    tokens: list
    input_ids: list
    input_mask: list
    segment_ids: list


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates a pair in place, one token at a time from the end of the longer list.

    Deterministic, as in the original: on a tie the token comes off `tokens_b`.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def truncated_lengths(len_a, len_b, budget):
    """The lengths `truncate_seq_pair` keeps of texts of `len_a` and `len_b` pieces within
    `budget`, without the loop.

    The loop pops from the longer text (from B on a tie), so a text at most half the budget
    long stays whole and the other takes the rest; otherwise A keeps `ceil(budget / 2)` and B
    `floor(budget / 2)`. Graph twin: `data.tokenization.preprocessor.truncated_lengths_graph`.

    Args:
        len_a: pieces of the first text.
        len_b: pieces of the second text.
        budget: pieces both may keep together.

    Returns:
        (kept of A, kept of B).
    """
    keep_a = min(len_a, max(budget - len_b, (budget + 1) // 2))
    keep_b = min(len_b, max(budget - len_a, budget // 2))
    return keep_a, keep_b


def pack_tokens(tokens_a, tokens_b, max_seq_length, convert_tokens_to_ids, unique_id=0):
    """Builds `[CLS] A [SEP] (B [SEP])` with segment ids, mask and zero padding.

    Args:
        tokens_a: WordPiece tokens of the first text (truncated in place).
        tokens_b: tokens of the second text, or None.
        max_seq_length: padded length.
        convert_tokens_to_ids: the tokenizer's token -> id function.
        unique_id: stored in the result.

    Returns:
        `InputFeatures`.
    """
    if tokens_b:
        # Room for [CLS], [SEP], [SEP].
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        del tokens_a[max_seq_length - 2 :]
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, "[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = convert_tokens_to_ids(tokens)
    padding = max_seq_length - len(input_ids)
    return InputFeatures(
        unique_id=unique_id,
        tokens=tokens,
        input_ids=input_ids + [0] * padding,
        input_mask=[1] * len(input_ids) + [0] * padding,
        segment_ids=segment_ids + [0] * padding,
    )


def log_features(features, segment_key="segment_ids"):
    """Logs one example in the original's `*** Example ***` format."""
    logging.info("*** Example ***")
    logging.info("unique_id: %s", features.unique_id)
    logging.info("tokens: %s", " ".join(features.tokens))
    logging.info("input_ids: %s", " ".join(str(x) for x in features.input_ids))
    logging.info("input_mask: %s", " ".join(str(x) for x in features.input_mask))
    logging.info("%s: %s", segment_key, " ".join(str(x) for x in features.segment_ids))
