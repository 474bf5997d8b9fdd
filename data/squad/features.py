"""SQuAD features: WordPiece windows over long contexts, as the original `run_squad.py`.

`convert_examples_to_features` tokenizes each example's question and context, cuts long
contexts into overlapping windows (doc stride) and labels each window with the answer's
position; `data.squad.records` writes them in the original's record layout and
`data.squad.postprocess` turns the model's logits per window back into answers.
"""

import dataclasses

from absl import logging

from data.windows import max_context_windows, sliding_windows

# The first unique id, as the original: ids are ten digits wide and never collide with 0.
FIRST_UNIQUE_ID = 1000000000
# Examples whose features are logged in full, as the original.
_NUM_LOGGED = 20


@dataclasses.dataclass
class SquadFeatures:
    """The model inputs of one window of one example.

    Attributes:
        unique_id: id of this feature, counting from 1000000000 across all examples.
        example_index: position of its example in the converted list.
        doc_span_index: which window of the example's context this is.
        tokens: `[CLS] query [SEP] window [SEP]` WordPiece tokens, without padding.
        token_to_orig_map: position in `tokens` -> index in the example's `doc_tokens`, for
            every window position.
        token_is_max_context: position -> whether this window gives that token its most
            balanced context among all windows holding it.
        input_ids: int list [max_seq_length], padded with 0.
        input_mask: 1 for real tokens, 0 for padding.
        segment_ids: 0 for `[CLS]`, the query and its `[SEP]`; 1 for the window and last `[SEP]`.
        start_position: answer start in `tokens` (training; 0 when the answer is impossible or
            not wholly inside this window).
        end_position: answer end, likewise.
        is_impossible: the example's `is_impossible`.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool | None = None


def _improve_answer_span(doc_tokens, start, end, tokenizer, orig_answer_text):
    """Returns the tightest (start, end) inside the span whose pieces spell the answer.

    Annotations are by character, so the words holding an answer can carry more: for the
    answer "1895" in "(1895-1943).", the words give the whole parenthesis, while the pieces
    "( 1895 - 1943 ) ." contain it exactly. When no sub-span matches (an answer that is part of
    a word piece, like "Japan" in "Japanese") the span is kept.
    """
    answer_pieces = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start : new_end + 1]) == answer_pieces:
                return new_start, new_end
    return start, end


def _log_feature(feature, is_training):
    f = feature
    logging.info("*** Example ***")
    for name, value in (
        ("unique_id", f.unique_id),
        ("example_index", f.example_index),
        ("doc_span_index", f.doc_span_index),
        ("tokens", " ".join(f.tokens)),
        ("token_to_orig_map", " ".join(f"{k}:{v}" for k, v in f.token_to_orig_map.items())),
        ("token_is_max_context", " ".join(f"{k}:{v}" for k, v in f.token_is_max_context.items())),
        ("input_ids", " ".join(map(str, f.input_ids))),
        ("input_mask", " ".join(map(str, f.input_mask))),
        ("segment_ids", " ".join(map(str, f.segment_ids))),
    ):
        logging.info("%s: %s", name, value)
    if is_training and f.is_impossible:
        logging.info("impossible example")
    elif is_training:
        logging.info("start_position: %d", f.start_position)
        logging.info("end_position: %d", f.end_position)
        logging.info("answer: %s", " ".join(f.tokens[f.start_position : f.end_position + 1]))


def convert_examples_to_features(
    examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training, log=True
):
    """Tokenizes examples into fixed-length windows, as the original `run_squad.py`.

    The question keeps its first `max_query_length` pieces. A context longer than the room
    left (`max_seq_length - len(query) - 3`) becomes several windows, each starting
    `doc_stride` pieces after the previous one. For training, the answer's pieces are narrowed
    by `_improve_answer_span`; a window that does not hold the whole answer, like an impossible
    question, is labelled 0 (`[CLS]`) and kept. Every feature of the first 20 examples is
    logged in the original's format.

    Args:
        examples: list of `SquadExample`.
        tokenizer: a `data.tokenization.FullTokenizer`.
        max_seq_length: padded length of each feature.
        doc_stride: pieces between the starts of consecutive windows.
        max_query_length: question pieces kept.
        is_training: label the answer positions.
        log: log the first examples' features (off for serving).

    Returns:
        list of `SquadFeatures`, example by example and window by window.

    Raises:
        ValueError: if `max_seq_length <= max_query_length + 3` (no room for the context) or
            `doc_stride < 1`.
    """
    if max_seq_length <= max_query_length + 3:
        raise ValueError(
            f"The max_seq_length ({max_seq_length}) must be greater than max_query_length "
            f"({max_query_length}) + 3; raise max_seq_length or lower max_query_length."
        )
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be at least 1, got {doc_stride}.")
    features = []
    unique_id = FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]
        tok_to_orig_index = []
        orig_to_tok_index = []
        all_doc_tokens = []
        for word_index, word in enumerate(example.doc_tokens):
            orig_to_tok_index.append(len(all_doc_tokens))
            pieces = tokenizer.tokenize(word)
            tok_to_orig_index.extend([word_index] * len(pieces))
            all_doc_tokens.extend(pieces)

        answer_start = answer_end = None
        if is_training and not example.is_impossible:
            answer_start = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                answer_end = orig_to_tok_index[example.end_position + 1] - 1
            else:
                answer_end = len(all_doc_tokens) - 1
            answer_start, answer_end = _improve_answer_span(
                all_doc_tokens, answer_start, answer_end, tokenizer, example.orig_answer_text
            )

        # Room for the context after [CLS] query [SEP] ... [SEP].
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        doc_spans = sliding_windows(len(all_doc_tokens), max_tokens_for_doc, doc_stride)
        best_spans = max_context_windows(doc_spans, len(all_doc_tokens))
        doc_offset = len(query_tokens) + 2  # [CLS] query [SEP]
        for span_index, (span_start, span_length) in enumerate(doc_spans):
            tokens = ["[CLS]", *query_tokens, "[SEP]"]
            token_to_orig_map = {}
            token_is_max_context = {}
            for piece in range(span_start, span_start + span_length):
                position = len(tokens)
                token_to_orig_map[position] = tok_to_orig_index[piece]
                token_is_max_context[position] = best_spans[piece] == span_index
                tokens.append(all_doc_tokens[piece])
            tokens.append("[SEP]")
            padding = [0] * (max_seq_length - len(tokens))
            input_ids = tokenizer.convert_tokens_to_ids(tokens) + padding
            input_mask = [1] * len(tokens) + padding
            segment_ids = [0] * doc_offset + [1] * (span_length + 1) + padding

            start_position = end_position = None
            if is_training:
                span_end = span_start + span_length - 1
                if example.is_impossible or not (
                    span_start <= answer_start and answer_end <= span_end
                ):
                    start_position = end_position = 0
                else:
                    start_position = answer_start - span_start + doc_offset
                    end_position = answer_end - span_start + doc_offset

            feature = SquadFeatures(
                unique_id=unique_id,
                example_index=example_index,
                doc_span_index=span_index,
                tokens=tokens,
                token_to_orig_map=token_to_orig_map,
                token_is_max_context=token_is_max_context,
                input_ids=input_ids,
                input_mask=input_mask,
                segment_ids=segment_ids,
                start_position=start_position,
                end_position=end_position,
                is_impossible=example.is_impossible,
            )
            if log and example_index < _NUM_LOGGED:
                _log_feature(feature, is_training)
            features.append(feature)
            unique_id += 1
    return features
