"""NER windows: each sentence as `[CLS] pieces [SEP]`, the first piece of each word labelled.

The first WordPiece of each word carries the word's tag; the other pieces, `[CLS]`, `[SEP]`,
context and padding carry -1 (no loss, no prediction). A word whose WordPiece tokenization is
empty (only characters the tokenizer drops) is read as `[UNK]`, so that it too gets a tag.

Windows (`build_windows`):
* A sentence that fits (`max_seq_length - 2` pieces) is one window. With document context, the
  rest of the window is filled with the pieces of the neighbouring sentences of the same
  document, half before and half after (the other side takes what one side lacks); only the
  sentence itself is labelled ("maximal document context", BERT paper §5.3).
* A longer sentence is cut into overlapping windows `doc_stride` pieces apart (no context
  added), and each word is labelled in the one window where its first piece has the most
  context (`data.windows.max_context_windows`, the SQuAD rule). No word is ever dropped.
"""

import dataclasses

from absl import logging

from data.ner.conll import sentence_tags
from data.windows import max_context_windows, sliding_windows

NO_LABEL = -1
_NUM_LOGGED = 5


@dataclasses.dataclass
class NerWindow:
    """The model inputs of one window.

    Attributes:
        input_ids, input_mask, segment_ids: int lists [max_seq_length], padded with 0
            (segment ids all 0: one segment).
        label_ids: int list [max_seq_length]: the tag id at each labelled position, -1
            elsewhere (and at labelled positions when the file has no tags).
        words: (position, sentence index, word index) of each word this window predicts.
    """

    input_ids: list
    input_mask: list
    segment_ids: list
    label_ids: list
    words: list


def _sentence_pieces(sentence, tokenizer):
    """(pieces, first piece index of each word) of one sentence."""
    pieces, firsts = [], []
    for word in sentence.words:
        firsts.append(len(pieces))
        pieces.extend(tokenizer.tokenize(word.text) or ["[UNK]"])
    return pieces, firsts


def _documents(sentences):
    """Groups consecutive sentence indices by document."""
    groups = []
    for index, sentence in enumerate(sentences):
        if not groups or sentences[groups[-1][0]].document != sentence.document:
            groups.append([])
        groups[-1].append(index)
    return groups


def _context(doc_pieces, start, end, room):
    """(left, right) context pieces around doc_pieces[start:end], at most `room` in all."""
    left = min(start, room // 2)
    right = min(len(doc_pieces) - end, room - left)
    left = min(start, room - right)
    return doc_pieces[start - left : start], doc_pieces[end : end + right]


def build_windows(
    sentences, tokenizer, label_map, max_seq_length, doc_stride, document_context=False
):
    """Turns sentences into fixed-length model windows.

    Args:
        sentences: list of `data.ner.conll.Sentence`.
        tokenizer: a `FullTokenizer`.
        label_map: IOB2 tag -> id, or None for sentences without tags (all labels -1).
        max_seq_length: padded length of each window (at least 3).
        doc_stride: pieces between the starts of the windows of a long sentence.
        document_context: fill windows with the neighbouring sentences of the same document.

    Returns:
        list of `NerWindow`, sentence by sentence; every word of every sentence is predicted by
        exactly one window.

    Raises:
        ValueError: for max_seq_length < 3 or doc_stride < 1.
    """
    if max_seq_length < 3:
        raise ValueError(
            f"max_seq_length must be at least 3 ([CLS] word [SEP]), got {max_seq_length}."
        )
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be at least 1, got {doc_stride}.")
    room = max_seq_length - 2
    windows = []
    for indices in _documents(sentences):
        tokenized = [_sentence_pieces(sentences[i], tokenizer) for i in indices]
        starts = []
        doc_pieces = []
        for pieces, _ in tokenized:
            starts.append(len(doc_pieces))
            doc_pieces.extend(pieces)
        for offset, sentence_index in enumerate(indices):
            pieces, firsts = tokenized[offset]
            tags = None
            if label_map is not None:
                tags = [label_map[tag] for tag in sentence_tags(sentences[sentence_index])]
            spans = sliding_windows(len(pieces), room, doc_stride)
            best = max_context_windows(spans, len(pieces))
            for span_index, (span_start, span_length) in enumerate(spans):
                left = right = []
                if document_context and len(spans) == 1:
                    start = starts[offset]
                    left, right = _context(
                        doc_pieces, start, start + len(pieces), room - len(pieces)
                    )
                tokens = [
                    "[CLS]",
                    *left,
                    *pieces[span_start : span_start + span_length],
                    *right,
                    "[SEP]",
                ]
                label_ids = [NO_LABEL] * max_seq_length
                words = []
                for word_index, first in enumerate(firsts):
                    if best[first] != span_index:
                        continue
                    position = 1 + len(left) + first - span_start
                    words.append((position, sentence_index, word_index))
                    if tags is not None:
                        label_ids[position] = tags[word_index]
                if not words:
                    continue  # a window of a long sentence that is no word's best
                padding = [0] * (max_seq_length - len(tokens))
                window = NerWindow(
                    input_ids=tokenizer.convert_tokens_to_ids(tokens) + padding,
                    input_mask=[1] * len(tokens) + padding,
                    segment_ids=[0] * max_seq_length,
                    label_ids=label_ids,
                    words=words,
                )
                if len(windows) < _NUM_LOGGED:
                    _log_window(tokens, window)
                windows.append(window)
    return windows


def _log_window(tokens, window):
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokens))
    logging.info("input_ids: %s", " ".join(map(str, window.input_ids)))
    logging.info("label_ids: %s", " ".join(map(str, window.label_ids)))


def word_predictions(windows, predicted_ids, labels):
    """The predicted tag of every word, from each word's window.

    Args:
        windows: the `NerWindow` list the predictions are for.
        predicted_ids: int array `[num_windows, max_seq_length]` of predicted tag ids.
        labels: the tag list (id -> tag).

    Returns:
        dict (sentence index, word index) -> tag.
    """
    if len(predicted_ids) != len(windows):
        raise RuntimeError(f"{len(predicted_ids)} predictions for {len(windows)} windows")
    tags = {}
    for window, row in zip(windows, predicted_ids, strict=True):
        for position, sentence_index, word_index in window.words:
            tags[(sentence_index, word_index)] = labels[int(row[position])]
    return tags
