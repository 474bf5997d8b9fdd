"""extract_features' input as a stream of model rows, and each line's tokens put back together.

Without `--doc_stride` a line is one row, packed and truncated as in the original. With it, a
single sentence longer than one row is cut into `data.windows.sliding_windows` over its
pieces, each window a row `[CLS] piece... [SEP]`; every piece takes its values from the
window where it has the most context (`max_context_windows`, the original run_squad's rule),
the line's `[CLS]` from its first window and its `[SEP]` from its last, so a line of N pieces
gives N + 2 token rows whatever its length. A line that fits one window is one row, exactly
the row it is without `--doc_stride`.

Lines are read, tokenized and packed as the model pipeline pulls rows, so only the lines
between the reader and the writer are held (`LineStream.max_pending` counts them).
"""

import collections
import dataclasses
import threading

import numpy as np
import tensorflow as tf

from data.extraction.features import empty_input_error, iter_examples, split_line
from data.tokenization.full_tokenizer import convert_to_unicode
from data.tokenization.packing import log_features, pack_tokens
from data.windows import max_context_windows, sliding_windows
from fileio.errors import UserError

ROW_FEATURES = ("input_ids", "input_mask", "segment_ids")


@dataclasses.dataclass
class LinePlan:
    """How one line's output rows are taken from its windows' rows.

    Attributes:
        unique_id: the line number.
        tokens: the line's output tokens, `[CLS]` and `[SEP]` included.
        num_windows: model rows of this line (1 without windows).
        segments: (window, first position, count) runs: the output tokens, in order, are
            positions `first .. first + count - 1` of that window's row.
    """

    unique_id: int
    tokens: list
    num_windows: int
    segments: list


def scan_input(input_file, doc_stride=None):
    """Counts the lines of `input_file` (for the progress line) before anything is computed.

    With `doc_stride` every line must be a single sentence: windows cover one text, and a
    pair's windows would need a rule for which text to cut.

    Returns:
        The number of lines.

    Raises:
        UserError: the file is empty, or holds a pair while `doc_stride` is set.
    """
    if not tf.io.gfile.exists(input_file):
        raise UserError(f"--input_file={input_file} not found: pass an existing text file.")
    count = 0
    with tf.io.gfile.GFile(input_file, "rb") as reader:
        for count, raw in enumerate(reader, start=1):
            if doc_stride is not None and b" ||| " in raw:
                if split_line(convert_to_unicode(raw).strip())[1] is not None:
                    raise UserError(
                        f"Line {count - 1} of --input_file={input_file} is a pair "
                        "('text_a ||| text_b'), and --doc_stride windows single sentences only: "
                        "leave out --doc_stride (pairs are then truncated as in the original), "
                        "or put each text on a line of its own."
                    )
    if count == 0:
        raise empty_input_error(input_file)
    return count


def plan_line(example, max_seq_length, tokenizer, doc_stride=None):
    """Packs one line into model rows.

    Args:
        example: (unique_id, text_a, text_b or None) from `iter_examples`.
        max_seq_length: the row length.
        tokenizer: a `FullTokenizer`.
        doc_stride: pieces between window starts, or None for the original's truncation.

    Returns:
        (`LinePlan`, list of `InputFeatures`, one per window).
    """
    unique_id, text_a, text_b = example
    tokens_a = tokenizer.tokenize(text_a)
    tokens_b = tokenizer.tokenize(text_b) if text_b else None
    to_ids = tokenizer.convert_tokens_to_ids
    room = max_seq_length - 2
    if doc_stride is None or tokens_b or len(tokens_a) <= room:
        feature = pack_tokens(tokens_a, tokens_b, max_seq_length, to_ids, unique_id)
        return LinePlan(unique_id, feature.tokens, 1, [(0, 0, len(feature.tokens))]), [feature]
    windows = sliding_windows(len(tokens_a), room, doc_stride)
    best = max_context_windows(windows, len(tokens_a))
    features = [
        pack_tokens(tokens_a[start : start + length], None, max_seq_length, to_ids, unique_id)
        for start, length in windows
    ]
    segments = [(0, 0, 1)]  # the first window's [CLS]
    for piece, window in enumerate(best):
        position = piece - windows[window][0] + 1
        last = segments[-1]
        if last[0] == window and last[1] + last[2] == position:
            segments[-1] = (window, last[1], last[2] + 1)
        else:
            segments.append((window, position, 1))
    segments.append((len(windows) - 1, windows[-1][1] + 1, 1))  # the last window's [SEP]
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    return LinePlan(unique_id, tokens, len(windows), segments), features


def assemble(plan, window_rows):
    """One line's per-token values from its windows' rows.

    Args:
        plan: the line's `LinePlan`.
        window_rows: list (one per window) of arrays `[row_length, ...]`.

    Returns:
        array `[len(plan.tokens), ...]`.
    """
    if plan.num_windows == 1:
        return window_rows[0][: len(plan.tokens)]
    return np.concatenate(
        [window_rows[w][first : first + count] for w, first, count in plan.segments]
    )


class LineStream:
    """The rows of every line, for a `tf.data.Dataset.from_generator`, and their plans for the
    writer, in the same order.

    The pipeline's thread reads lines as it needs rows (`rows`); the writer takes each line's
    plan as that line's rows come out of the model (`next_plan`). Only the lines in between
    are held.

    Args:
        input_file: the text file.
        max_seq_length: row length.
        tokenizer: a `FullTokenizer`.
        doc_stride: see `plan_line`.
        num_logged: lines logged as the original logs its first examples.
    """

    def __init__(self, input_file, max_seq_length, tokenizer, doc_stride=None, num_logged=5):
        self.input_file, self.max_seq_length = input_file, max_seq_length
        self.tokenizer, self.doc_stride, self.num_logged = tokenizer, doc_stride, num_logged
        self._plans = collections.deque()
        self._lock = threading.Lock()
        self.max_pending = 0  # the most lines held at once: flat in the file's length

    def rows(self):
        """Yields dict name -> int32 array `[max_seq_length]`, one per model row."""
        for index, example in enumerate(iter_examples(self.input_file)):
            plan, features = plan_line(
                example, self.max_seq_length, self.tokenizer, self.doc_stride
            )
            if index < self.num_logged:
                log_features(features[0], segment_key="input_type_ids")
            with self._lock:
                self._plans.append(plan)
                self.max_pending = max(self.max_pending, len(self._plans))
            for feature in features:
                yield {name: np.asarray(getattr(feature, name), np.int32) for name in ROW_FEATURES}

    def output_signature(self):
        spec = tf.TensorSpec([self.max_seq_length], tf.int32)
        return {name: spec for name in ROW_FEATURES}

    def next_plan(self):
        """The plan of the next line whose rows the writer meets (it was queued before them)."""
        with self._lock:
            return self._plans.popleft()
