"""The text-in NER SavedModel: sentences in, one tag per word out, windows in the graph.

`serving_default` takes `text` (string `[B]`), splits each on spaces and tabs into words (as
run_ner's CoNLL reader splits its columns), tokenizes each word (`FastFullTokenizer`, ids
identical to `FullTokenizer`; a word with no pieces reads as `[UNK]`), cuts a sentence longer
than `max_seq_length - 2` pieces into windows `doc_stride` pieces apart, and tags every word from
the window where its first piece has the most context: run_ner.py's `build_windows` without
document context, so no word is ever dropped. It returns `words` and `tags` as string `[B, W]`
padded with "" and `num_words` int32 `[B]` (dense, for TF Serving); the `tag` function of the
loaded object returns the same as ragged `[B, (words)]` tensors.

`serve_examples` takes serialized `tf.Example`s with run_ner's record features and returns, per
window, `tag_ids` int32 `[B, S]` and `tags` string `[B, S]` (the argmax tag at every position).
"""

import tensorflow as tf

from data.ner.records import ner_feature_spec
from data.tokenization.fast_tokenizer import FastFullTokenizer
from serving.contract import MODEL_INPUTS, NER_WORD_SEPARATORS
from serving.exports.windows import max_context_windows_graph, sliding_windows_graph


class NerExport(tf.Module):
    """A fine-tuned `BertTokenClassifier` with its tokenizer and windowing.

    Args:
        model: the `BertTokenClassifier`, weights loaded.
        vocab_file: its vocabulary (stored as an asset).
        do_lower_case: as for run_ner (false for the paper's cased models).
        max_seq_length: window length, as for run_ner.
        doc_stride: pieces between window starts in a long sentence, as for run_ner.
        labels: the tag list of labels.txt (id -> tag).
    """

    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, doc_stride, labels):
        super().__init__(name="text_ner")
        if max_seq_length < 3 or doc_stride < 1:
            raise ValueError(
                f"max_seq_length must be at least 3 and doc_stride at least 1, got "
                f"{max_seq_length} and {doc_stride}."
            )
        self.model = model
        self.tokenizer = FastFullTokenizer(vocab_file, do_lower_case=do_lower_case)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False)
        vocab = self.tokenizer.vocab
        self._cls, self._sep, self._unk = (vocab[t] for t in ("[CLS]", "[SEP]", "[UNK]"))
        self.max_seq_length = max_seq_length
        self._room = max_seq_length - 2
        self._stride = doc_stride
        self._labels = tf.constant(list(labels))
        self.tag = tf.function(self._tag, input_signature=[tf.TensorSpec([None], tf.string)])

    def _words(self, text):
        words = tf.strings.split(tf.strings.regex_replace(text, NER_WORD_SEPARATORS, " "), sep=" ")
        return tf.ragged.boolean_mask(words, tf.not_equal(words, ""))

    def _word_pieces(self, words):
        """int64 ragged [W, (pieces)] over all words; an empty tokenization becomes [UNK]."""
        pieces = self.tokenizer.tokenize(words)
        empty = tf.cast(tf.equal(pieces.row_lengths(), 0), tf.int64)
        unk = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(empty)], tf.constant(self._unk, tf.int64)), empty
        )
        return tf.concat([pieces, unk], axis=1)

    def _window_inputs(self, pieces, piece_offsets, starts, lengths):
        """The model inputs of every window: int32 [K, S] each."""
        rows = starts.value_rowids()
        start, length = starts.flat_values, lengths.flat_values
        offsets = tf.range(self._room, dtype=tf.int64)
        inside = offsets[None, :] < length[:, None]
        index = tf.gather(piece_offsets, rows)[:, None] + start[:, None] + offsets[None, :]
        index = tf.where(inside, index, 0)
        ids = tf.where(inside, tf.gather(pieces, index), 0)
        num = tf.shape(ids)[0]
        cls = tf.fill([num, 1], tf.constant(self._cls, tf.int64))
        body = tf.concat([cls, ids, tf.zeros([num, 1], tf.int64)], axis=1)
        positions = tf.range(self.max_seq_length, dtype=tf.int64)[None, :]
        body = tf.where(positions == length[:, None] + 1, tf.constant(self._sep, tf.int64), body)
        mask = positions < length[:, None] + 2
        return {
            "input_ids": tf.cast(body, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "segment_ids": tf.zeros_like(body, tf.int32),
        }

    def _tag(self, text):
        """Words and their tags: string ragged [B, (words)] each."""
        words = self._words(text)
        word_rows = words.value_rowids()
        word_pieces = self._word_pieces(words.flat_values)
        word_lengths = word_pieces.row_lengths()
        text_lengths = tf.reduce_sum(
            tf.RaggedTensor.from_row_splits(word_lengths, words.row_splits), axis=1
        )
        text_offsets = tf.cumsum(text_lengths, exclusive=True)
        # Each word's first piece, counted within its text.
        first = tf.cumsum(word_lengths, exclusive=True) - tf.gather(text_offsets, word_rows)
        starts, lengths = sliding_windows_graph(text_lengths, self._room, self._stride)
        inputs = self._window_inputs(word_pieces.flat_values, text_offsets, starts, lengths)
        window_tags = tf.argmax(self.model(inputs, training=False), -1, output_type=tf.int32)

        window = max_context_windows_graph(first, word_rows, starts, lengths)
        position = 1 + first - tf.gather(starts.flat_values, window)
        tag_ids = tf.gather_nd(window_tags, tf.stack([window, position], axis=1))
        tags = tf.gather(self._labels, tag_ids)
        return words, tf.RaggedTensor.from_row_splits(tags, words.row_splits)

    def signatures(self):
        """`{"serving_default": ..., "serve_examples": ...}` concrete functions."""

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve_text(text):
            words, tags = self._tag(text)
            return {
                "words": words.to_tensor(default_value=""),
                "tags": tags.to_tensor(default_value=""),
                "num_words": tf.cast(words.row_lengths(), tf.int32),
            }

        spec = ner_feature_spec(self.max_seq_length)
        spec = {k: spec[k] for k in MODEL_INPUTS}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve_examples(examples):
            parsed = tf.io.parse_example(examples, spec)
            inputs = {k: tf.cast(v, tf.int32) for k, v in parsed.items()}
            tag_ids = tf.argmax(self.model(inputs, training=False), -1, output_type=tf.int32)
            return {"tag_ids": tag_ids, "tags": tf.gather(self._labels, tag_ids)}

        self.serve_text, self.serve_examples = serve_text, serve_examples
        return {"serving_default": serve_text, "serve_examples": serve_examples}
