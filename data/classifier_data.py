"""Sentence (pair) classification data: task registry, features and TFRecord files.

`PROCESSORS` maps each task name to its processor class (`data.glue_processors`, on the base
classes of `data.processor_base`); a new task is one `DataProcessor` subclass added there. `convert_single_example` builds the model inputs
exactly as the original `run_classifier.py`, and `write_classifier_tfrecord` writes them in the
original's record layout.
"""

import dataclasses

from absl import logging

from data.example_files import float_feature, int64_feature, write_examples
from data.features import pack_tokens
from data.glue_processors import (
    AxProcessor,
    ColaProcessor,
    MnliProcessor,
    MrpcProcessor,
    QnliProcessor,
    QqpProcessor,
    RteProcessor,
    Sst2Processor,
    StsbProcessor,
    WnliProcessor,
    XnliProcessor,
)
from data.processor_base import DataProcessor, InputExample, PaddingInputExample

__all__ = [
    "PROCESSORS",
    "ClassifierFeatures",
    "DataProcessor",
    "InputExample",
    "PaddingInputExample",
    "canonical_task_name",
    "classifier_feature_spec",
    "convert_examples_to_features",
    "convert_single_example",
    "get_processor",
    "write_classifier_tfrecord",
]

PROCESSORS = {
    "cola": ColaProcessor,
    "sst2": Sst2Processor,
    "mrpc": MrpcProcessor,
    "stsb": StsbProcessor,
    "qqp": QqpProcessor,
    "mnli": MnliProcessor,
    "qnli": QnliProcessor,
    "rte": RteProcessor,
    "wnli": WnliProcessor,
    "ax": AxProcessor,
    "xnli": XnliProcessor,
}

# Other spellings in use (GLUE site names, other toolkits), after lower-casing and dropping
# "-" and "_": "SST-2" -> "sst2", "MNLI-mm" -> "mnlimm".
_ALIASES = {
    "mnlim": "mnli",
    "mnlimm": "mnli",
    "mnlimatched": "mnli",
    "mnlimismatched": "mnli",
    "multinli": "mnli",
    "diagnostic": "ax",
    "gluediagnostic": "ax",
}

# Records logged in full before conversion goes quiet, as the original.
_NUM_LOGGED = 5


def canonical_task_name(task_name):
    """Returns the `PROCESSORS` key for a task name, or None if there is none.

    Case-insensitive; hyphens, underscores and spaces are ignored ("SST-2", "sts_b"), and a few
    other names are accepted ("MNLI-m", "MNLI-mm" -> "mnli", "diagnostic" -> "ax").
    """
    key = "".join(c for c in str(task_name).lower() if c not in "-_ ")
    key = _ALIASES.get(key, key)
    return key if key in PROCESSORS else None


def get_processor(task_name, **kwargs):
    """Builds the processor of a task.

    Args:
        task_name: a `PROCESSORS` key or alias, any case.
        **kwargs: options of that processor (XNLI: `language`).

    Returns:
        A `DataProcessor`.

    Raises:
        ValueError: for an unknown task (listing the known ones) or an option the task lacks.
    """
    key = canonical_task_name(task_name)
    if key is None:
        raise ValueError(f"Task not found: {task_name}. Known tasks: {sorted(PROCESSORS)}")
    try:
        return PROCESSORS[key](**kwargs)
    except TypeError as err:
        raise ValueError(
            f"Task {key} does not take the options {sorted(kwargs)} ({err})."
        ) from None


@dataclasses.dataclass
class ClassifierFeatures:
    """The model inputs of one example.

    Attributes:
        input_ids: int list [max_seq_length], padded with 0.
        input_mask: 1 for real tokens, 0 for padding.
        segment_ids: 0 for `[CLS]`, A and the first `[SEP]`; 1 for B and the last `[SEP]`.
        label_id: class index (int), or the target value (float) for regression.
        is_real_example: False for `PaddingInputExample`.
    """

    input_ids: list
    input_mask: list
    segment_ids: list
    label_id: int | float
    is_real_example: bool = True


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
    if is_regression:
        try:
            label_id = float(example.label)
        except (TypeError, ValueError):
            raise ValueError(
                f"Example {example.guid}: the target must be a number, got {example.label!r}."
            ) from None
    else:
        label_map = {label: i for i, label in enumerate(label_list)}
        if example.label not in label_map:
            raise ValueError(
                f"Example {example.guid}: unknown label {example.label!r}; the labels are "
                f"{list(label_list)}."
            )
        label_id = label_map[example.label]
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    packed = pack_tokens(tokens_a, tokens_b, max_seq_length, tokenizer.convert_tokens_to_ids)
    if ex_index < _NUM_LOGGED:
        logging.info("*** Example ***")
        logging.info("guid: %s", example.guid)
        logging.info("tokens: %s", " ".join(packed.tokens))
        logging.info("input_ids: %s", " ".join(str(x) for x in packed.input_ids))
        logging.info("input_mask: %s", " ".join(str(x) for x in packed.input_mask))
        logging.info("segment_ids: %s", " ".join(str(x) for x in packed.segment_ids))
        logging.info("label: %s (id = %s)", example.label, label_id)
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


def classifier_feature_spec(max_seq_length, is_regression=False):
    """The features of a classifier TFRecord, for `tf.io.parse_single_example`.

    Args:
        max_seq_length: length of input_ids, input_mask and segment_ids.
        is_regression: `label_ids` is float32 rather than int64.

    Returns:
        dict of feature name -> `tf.io.FixedLenFeature`.
    """
    import tensorflow as tf

    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


def write_classifier_tfrecord(features, path, is_regression=None):
    """Writes features as the original's TFRecord file, atomically.

    Each record holds `input_ids`, `input_mask`, `segment_ids` (int64 [max_seq_length]),
    `label_ids` (int64 [1], float32 for regression) and `is_real_example` (int64 [1]). The file
    appears under `path` only once complete; "Writing example %d of %d" is logged every 10000.

    Args:
        features: list of `ClassifierFeatures`.
        path: output file (any file system TensorFlow knows).
        is_regression: float labels; None to decide from the labels' type.
    """
    if is_regression is None:
        is_regression = any(isinstance(f.label_id, float) for f in features)
    label_feature = float_feature if is_regression else int64_feature
    records = (
        {
            "input_ids": int64_feature(f.input_ids),
            "input_mask": int64_feature(f.input_mask),
            "segment_ids": int64_feature(f.segment_ids),
            "label_ids": label_feature([float(f.label_id) if is_regression else f.label_id]),
            "is_real_example": int64_feature([int(f.is_real_example)]),
        }
        for f in features
    )
    write_examples(path, records, count=len(features))
