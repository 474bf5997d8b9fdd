"""Sentence (pair) classification features: examples tokenized, truncated and padded.

`convert_single_example` builds the model inputs exactly as the original `run_classifier.py`;
`data.glue.records` writes them in the original's record layout.
"""

import dataclasses

from absl import logging

from data.glue.processor_base import PaddingInputExample
from data.tokenization.packing import pack_tokens

# Records logged in full before conversion goes quiet, as the original.
NUM_LOGGED = 5


@dataclasses.dataclass
class ClassifierFeatures:
    """The model inputs of one example.

    Attributes:
        input_ids: int list [max_seq_length], padded with 0.
        input_mask: 1 for real tokens, 0 for padding.
        segment_ids: 0 for `[CLS]`, A and the first `[SEP]`; 1 for B and the last `[SEP]`.
        label_id: class index (int), the target value (float) for regression, or a multi-hot
            int list [num_labels] for a multi-label example.
        is_real_example: False for `PaddingInputExample`.
    """

    input_ids: list
    input_mask: list
    segment_ids: list
    label_id: int | float | list
    is_real_example: bool = True


def label_id_of(example, label_list, is_regression):
    """The class index of the example's label, its target as a float for regression, or the
    multi-hot list [num_labels] of a multi-label example (whose label is a tuple or list of
    label strings, possibly empty).

    Raises:
        ValueError: if the label is not in `label_list` (or not a number, for regression).
    """
    if is_regression:
        try:
            return float(example.label)
        except (TypeError, ValueError):
            raise ValueError(
                f"Example {example.guid}: the target must be a number, got {example.label!r}."
            ) from None
    label_map = {label: i for i, label in enumerate(label_list)}
    if isinstance(example.label, (tuple, list)):
        hot = [0] * len(label_list)
        for label in example.label:
            if label not in label_map:
                raise ValueError(
                    f"Example {example.guid}: unknown label {label!r}; the labels are "
                    f"{list(label_list)}."
                )
            hot[label_map[label]] = 1
        return hot
    if example.label not in label_map:
        raise ValueError(
            f"Example {example.guid}: unknown label {example.label!r}; the labels are "
            f"{list(label_list)}."
        )
    return label_map[example.label]


def log_example(example, packed, label_id):
    """Logs one record in the original's `*** Example ***` format."""
    logging.info("*** Example ***")
    logging.info("guid: %s", example.guid)
    logging.info("tokens: %s", " ".join(packed.tokens))
    logging.info("input_ids: %s", " ".join(str(x) for x in packed.input_ids))
    logging.info("input_mask: %s", " ".join(str(x) for x in packed.input_mask))
    logging.info("segment_ids: %s", " ".join(str(x) for x in packed.segment_ids))
    logging.info("label: %s (id = %s)", example.label, label_id)


def convert_single_example(
    ex_index, example, label_list, max_seq_length, tokenizer, is_regression=False
):
    """Tokenizes, truncates and pads one example, as the original `convert_single_example`.

    Pairs are truncated to `max_seq_length - 3` tokens by dropping the last token of the longer
    text (of B on a tie); a `text_b` that is empty or tokenizes to nothing makes a single-text
    input. The first 5 examples (`ex_index < 5`) are logged in the original's format.

    Args:
        ex_index: position of the example in its set (for logging).
        example: an `InputExample` or `PaddingInputExample`.
        label_list: the task's labels; a label's position is its id.
        max_seq_length: padded length.
        tokenizer: a `FullTokenizer` (anything with `tokenize` and `convert_tokens_to_ids`).
        is_regression: the label is a number, kept as a float.

    Returns:
        `ClassifierFeatures`.

    Raises:
        ValueError: if the label is not in `label_list` (or not a number, for regression).
    """
    if isinstance(example, PaddingInputExample):
        zeros = [0] * max_seq_length
        return ClassifierFeatures(list(zeros), list(zeros), list(zeros), 0, False)
    label_id = label_id_of(example, label_list, is_regression)
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    packed = pack_tokens(tokens_a, tokens_b, max_seq_length, tokenizer.convert_tokens_to_ids)
    if ex_index < NUM_LOGGED:
        log_example(example, packed, label_id)
    return ClassifierFeatures(packed.input_ids, packed.input_mask, packed.segment_ids, label_id)


def convert_examples_to_features(
    examples, label_list, max_seq_length, tokenizer, is_regression=False
):
    """Converts a list of examples with `convert_single_example` (the first 5 logged).

    Returns:
        list of `ClassifierFeatures`, in order.
    """
    return [
        convert_single_example(i, example, label_list, max_seq_length, tokenizer, is_regression)
        for i, example in enumerate(examples)
    ]
