"""NER windows: first pieces labelled, long sentences split without dropping a word (each word
predicted from its max-context window), and document context from the same document only."""

import os

import numpy as np
import pytest

from data.ner.conll import Sentence, Word, read_conll
from data.ner.features import NO_LABEL, build_windows, word_predictions
from data.ner.labels import labels_from_sentences
from data.tokenization.full_tokenizer import FullTokenizer
from tests.helpers.minilm import minilm_vocab
from tests.helpers.paths import TESTDATA


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(minilm_vocab(), do_lower_case=True)


def _sentence(words, document=0, tag="O"):
    return Sentence([Word(w, tag, i) for i, w in enumerate(words)], document)


def _tokens(tokenizer, window):
    length = sum(window.input_mask)
    return tokenizer.convert_ids_to_tokens(window.input_ids[:length])


def test_first_piece_of_each_word_carries_its_tag(tokenizer):
    sentence = Sentence(
        [Word("Johanson", "B-PER", 0), Word("visited", "O", 1), Word("U.S.", "B-LOC", 2)], 0
    )
    label_map = {"O": 0, "B-LOC": 1, "B-PER": 2}
    [window] = build_windows([sentence], tokenizer, label_map, 16, 8)
    tokens = _tokens(tokenizer, window)
    assert tokens == ["[CLS]", "johan", "##son", "visited", "u", ".", "s", ".", "[SEP]"]
    expected = [NO_LABEL] * 16
    expected[1], expected[3], expected[4] = 2, 0, 1
    assert window.label_ids == expected
    assert window.words == [(1, 0, 0), (3, 0, 1), (4, 0, 2)]
    assert window.segment_ids == [0] * 16
    assert window.input_mask == [1] * 9 + [0] * 7


def test_word_without_pieces_is_read_as_unk(tokenizer):
    sentence = _sentence(["a", "\u200b", "b"])
    [window] = build_windows([sentence], tokenizer, {"O": 0}, 8, 4)
    assert _tokens(tokenizer, window) == ["[CLS]", "a", "[UNK]", "b", "[SEP]"]
    assert [w[2] for w in window.words] == [0, 1, 2]


def _best_window(spans, piece):
    """Brute force: the window where `piece` has the largest min(left, right) context plus 0.01
    per window length; the first such window on ties."""
    best, best_score = None, None
    for index, (start, length) in enumerate(spans):
        if start <= piece < start + length:
            score = min(piece - start, start + length - 1 - piece) + 0.01 * length
            if best_score is None or score > best_score:
                best, best_score = index, score
    return best


@pytest.mark.parametrize("max_seq_length,doc_stride", [(8, 3), (10, 4), (7, 1), (12, 20)])
def test_long_sentence_every_word_once_from_its_max_context_window(
    tokenizer, max_seq_length, doc_stride
):
    words = [f"w{i}" if i % 3 else f"unbelievable{i}" for i in range(23)]
    sentence = _sentence(words)
    pieces, firsts = [], []
    for word in words:
        firsts.append(len(pieces))
        pieces.extend(tokenizer.tokenize(word))
    room = max_seq_length - 2
    # The windows, recomputed: start 0, then min(length, stride) further, until the end.
    spans, start = [], 0
    while True:
        length = min(room, len(pieces) - start)
        spans.append((start, length))
        if start + length == len(pieces):
            break
        start += min(length, doc_stride)
    windows = build_windows([sentence], tokenizer, {"O": 0}, max_seq_length, doc_stride)
    predicted = {}
    for window in windows:
        tokens = _tokens(tokenizer, window)
        # The window is a run of the sentence's pieces: find which span it is.
        span_index = next(i for i, (s, n) in enumerate(spans) if tokens[1:-1] == pieces[s : s + n])
        for position, _, word_index in window.words:
            assert word_index not in predicted
            assert window.label_ids[position] == 0
            predicted[word_index] = span_index
            assert tokens[position] == pieces[firsts[word_index]]
        assert sum(label >= 0 for label in window.label_ids) == len(window.words)
    assert sorted(predicted) == list(range(len(words)))
    for word_index, span_index in predicted.items():
        assert span_index == _best_window(spans, firsts[word_index]), word_index
    assert len(spans) > 1


def test_document_context_fills_from_the_same_document_only(tokenizer):
    docs = [[["red", "green"], ["blue"], ["cat", "dog", "sun"]], [["one"], ["two", "three"]]]
    sentences = [_sentence(words, d) for d, doc in enumerate(docs) for words in doc]
    windows = build_windows(sentences, tokenizer, {"O": 0}, 8, 4, document_context=True)
    assert len(windows) == len(sentences)
    flat = {
        d: [p for words in doc for w in words for p in tokenizer.tokenize(w)]
        for d, doc in enumerate(docs)
    }
    for window, sentence in zip(windows, sentences, strict=True):
        tokens = _tokens(tokenizer, window)
        body = tokens[1:-1]
        doc_pieces = flat[sentence.document]
        # A contiguous run of its own document, as long as the room (6) or the whole document.
        assert len(body) == min(6, len(doc_pieces))
        starts = [i for i in range(len(doc_pieces)) if doc_pieces[i : i + len(body)] == body]
        assert starts
        # Only the centre sentence is labelled, at its own words.
        labelled = [tokens[p] for p, _, _ in window.words]
        assert labelled == [tokenizer.tokenize(w.text)[0] for w in sentence.words]
        assert sum(label >= 0 for label in window.label_ids) == len(sentence.words)
    # "blue" (the middle of document 0) gets context on both sides.
    assert _tokens(tokenizer, windows[1])[1:-1] == ["red", "green", "blue", "cat", "dog", "sun"]
    # Off: one sentence per window.
    plain = build_windows(sentences, tokenizer, {"O": 0}, 8, 4)
    assert [_tokens(tokenizer, w)[1:-1] for w in plain][:2] == [["red", "green"], ["blue"]]


def test_context_is_split_evenly_when_both_sides_have_enough(tokenizer):
    words = [f"x{i}" for i in range(20)]
    sentences = [_sentence([w]) for w in words]
    windows = build_windows(sentences, tokenizer, {"O": 0}, 9, 4, document_context=True)
    pieces = [tokenizer.tokenize(w) for w in words]
    assert all(len(p) == 2 for p in pieces)  # "x", "##N"
    # Room 7: the sentence has 2 pieces, so 5 of context: 2 before, 3 after.
    tokens = _tokens(tokenizer, windows[10])[1:-1]
    flat = [p for ps in pieces for p in ps]
    assert tokens == flat[20 - 2 : 22 + 3]
    # At the start of the document all context comes after.
    assert _tokens(tokenizer, windows[0])[1:-1] == flat[:7]


def test_word_predictions_map_each_word_back(tokenizer):
    conll = read_conll(os.path.join(TESTDATA, "conll2003", "dev.txt"), "required")
    labels = labels_from_sentences(conll.sentences)
    label_map = {t: i for i, t in enumerate(labels)}
    windows = build_windows(conll.sentences, tokenizer, label_map, 32, 8, document_context=True)
    # Predicting the gold ids back gives the gold tags (IOB2) of every word.
    predicted = np.array([[max(label, 0) for label in w.label_ids] for w in windows])
    tags = word_predictions(windows, predicted, labels)
    assert len(tags) == sum(len(s.words) for s in conll.sentences)
    for i, sentence in enumerate(conll.sentences):
        for j, word in enumerate(sentence.words):
            assert tags[(i, j)] == word.tag
    with pytest.raises(RuntimeError, match="predictions for"):
        word_predictions(windows, predicted[:-1], labels)
