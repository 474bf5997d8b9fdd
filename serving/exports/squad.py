"""The text-in SQuAD SavedModel: a question and its context in, the answer out.

`serving_default` takes `question` and `context` (string `[B]`) and runs run_squad.py's whole
path in the graph: the context split into words on whitespace (the original's rule), each word
tokenized (`FastFullTokenizer`, ids identical to `FullTokenizer`), the question cut to
`max_query_length` pieces, the context cut into windows `doc_stride` pieces apart, the model on
every window, then the original's answer selection: the `n_best_size` best start and end
logits of each window paired into valid spans (context tokens only, start in its max-context
window, at most `max_answer_length` pieces), the best sum of logits wins, and its text is
recovered from the context's own characters (`get_final_text`). The choice is
`serving.exports.squad_answer_choice`, the graph twins of the runners' own rules
(`data.squad.answer_choice`). Outputs:

* `answer` string `[B]` (SQuAD 2.0: "" for no answer), `start_char` / `end_char` int32 `[B]`
  (the answer's first character and one past its last in `context`; -1 without answer),
  `score` float32 `[B]` (the best span's start + end logit);
* SQuAD 2.0 also `no_answer_probability` float32 `[B]`: the two-way softmax of the null score
  against the best span's score (the sigmoid of null_odds.json's value). The answer is "" when
  that difference exceeds the null threshold built into the model.

`serve_examples` takes serialized `tf.Example`s with run_squad's record features and returns
`start_logits` and `end_logits` `[B, S]` per window.
"""

import tensorflow as tf
import tensorflow_text as text

from data.squad.records import squad_feature_spec
from data.tokenization.fast_tokenizer import FastFullTokenizer
from serving.contract import MODEL_INPUTS
from serving.exports.squad_answer_choice import (
    best_span_graph,
    final_text_graph,
    no_answer_graph,
    null_score_graph,
    window_spans_graph,
)
from serving.exports.windows import max_context_windows_graph, sliding_windows_graph

# The original's whitespace for splitting the context (run_squad's is_whitespace).
_WHITESPACE = "[ \t\r\n\u202f]+"


class SquadExport(tf.Module):
    """A fine-tuned `BertSpanModel` with tokenization, windows and answer selection.

    Args:
        model: the `BertSpanModel`, weights loaded.
        vocab_file: its vocabulary (stored as an asset).
        do_lower_case, max_seq_length, doc_stride, max_query_length, n_best_size,
            max_answer_length, version_2_with_negative: as for run_squad.py.
        null_score_diff_threshold: SQuAD 2.0: "" when null score - best span score exceeds it.
    """

    def __init__(
        self,
        model,
        vocab_file,
        do_lower_case,
        max_seq_length,
        doc_stride,
        max_query_length,
        n_best_size,
        max_answer_length,
        version_2_with_negative,
        null_score_diff_threshold=0.0,
    ):
        super().__init__(name="text_squad")
        self.model = model
        self.tokenizer = FastFullTokenizer(vocab_file, do_lower_case=do_lower_case)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False)
        vocab = self.tokenizer.vocab
        self._cls, self._sep = vocab["[CLS]"], vocab["[SEP]"]
        tokens = [""] * (max(vocab.values()) + 1)
        for token, index in vocab.items():
            tokens[index] = token
        self._tokens = tf.constant(tokens)
        self.max_seq_length = max_seq_length
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.n_best_size = n_best_size
        self.max_answer_length = max_answer_length
        self.version_2_with_negative = version_2_with_negative
        self.null_score_diff_threshold = tf.Variable(
            float(null_score_diff_threshold), trainable=False, dtype=tf.float64
        )

    # ----- windows ----------------------------------------------------------------------

    def _inputs(self, query, doc_pieces, doc_offsets, rows, start, length, best_window):
        """`[CLS] query [SEP] window [SEP]` of every window: int32 [K, S] each; the question's
        length in each window, int64 [K]; and whether each window gives the piece at each
        position its most context, bool [K, S] (`best_window`: each piece's window)."""
        q_len = tf.gather(query.row_lengths(), rows)[:, None]
        j = tf.range(self.max_seq_length, dtype=tf.int64)[None, :]
        in_query = tf.logical_and(j >= 1, j <= q_len)
        q_index = tf.gather(query.row_starts(), rows)[:, None] + j - 1
        q_ids = tf.gather(query.values, tf.where(in_query, q_index, 0))
        d = j - q_len - 2
        in_doc = tf.logical_and(d >= 0, d < length[:, None])
        d_index = tf.gather(doc_offsets, rows)[:, None] + start[:, None] + d
        d_ids = tf.gather(doc_pieces, tf.where(in_doc, d_index, 0))
        ids = tf.where(in_query, q_ids, tf.where(in_doc, d_ids, 0))
        ids = tf.where(j == 0, tf.constant(self._cls, tf.int64), ids)
        is_sep = tf.logical_or(j == q_len + 1, j == q_len + 2 + length[:, None])
        ids = tf.where(is_sep, tf.constant(self._sep, tf.int64), ids)
        last = q_len + 2 + length[:, None]
        window_index = tf.range(tf.size(rows, tf.int64))[:, None]
        max_context = in_doc & (
            tf.gather(best_window, tf.where(in_doc, d_index, 0)) == window_index
        )
        return (
            {
                "input_ids": tf.cast(ids, tf.int32),
                "input_mask": tf.cast(j <= last, tf.int32),
                "segment_ids": tf.cast(tf.logical_and(j >= q_len + 2, j <= last), tf.int32),
            },
            q_len[:, 0],
            max_context,
        )

    # ----- answer selection ---------------------------------------------------------------

    def _answer(self, question, context):
        words, byte_begin, _ = text.regex_split_with_offsets(context, _WHITESPACE)
        word_pieces = self.tokenizer.tokenize(words.flat_values)
        doc_length = tf.reduce_sum(
            tf.RaggedTensor.from_row_splits(word_pieces.row_lengths(), words.row_splits), axis=1
        )
        doc_offsets = tf.cumsum(doc_length, exclusive=True)
        query = self.tokenizer.tokenize(question)[:, : self.max_query_length]
        room = self.max_seq_length - query.row_lengths() - 3
        starts, lengths = sliding_windows_graph(doc_length, room, self.doc_stride)
        rows, start, length = starts.value_rowids(), starts.flat_values, lengths.flat_values
        pieces = tf.ragged.range(doc_length)
        best_window = max_context_windows_graph(
            pieces.flat_values, pieces.value_rowids(), starts, lengths
        )
        inputs, q_len, max_context = self._inputs(
            query, word_pieces.flat_values, doc_offsets, rows, start, length, best_window
        )
        # One all-padding window more, so that examples without any window index something.
        inputs = {k: tf.pad(v, [[0, 1], [0, 0]]) for k, v in inputs.items()}
        start_logits, end_logits = (
            tf.cast(x, tf.float64) for x in self.model(inputs, training=False)
        )
        starts_k, ends_k, scores = window_spans_graph(
            start_logits[:-1],
            end_logits[:-1],
            q_len + 2,
            length,
            max_context,
            self.n_best_size,
            self.max_answer_length,
        )
        window, best_s, best_e, best_score, has_span = best_span_graph(
            starts_k, ends_k, scores, starts.row_lengths()
        )
        window_start = tf.gather(tf.concat([start, [0]], 0), window)
        window_query = tf.gather(tf.concat([q_len, [0]], 0), window)
        first = doc_offsets + window_start + best_s - window_query - 2
        last = first + best_e - best_s
        answer, start_char, end_char = self._span_text(
            context, words, byte_begin, word_pieces, first, last, has_span
        )
        outputs = {"score": tf.cast(tf.where(has_span, best_score, 0.0), tf.float32)}
        if not self.version_2_with_negative:
            answer = tf.where(has_span, answer, "empty")
        else:
            score_null = null_score_graph(start_logits[:-1], end_logits[:-1], starts.row_lengths())
            no_answer, probability = no_answer_graph(
                score_null, best_score, has_span, self.null_score_diff_threshold
            )
            answer = tf.where(no_answer, "", answer)
            start_char = tf.where(no_answer, -1, start_char)
            end_char = tf.where(no_answer, -1, end_char)
            outputs["no_answer_probability"] = probability
        outputs.update(answer=answer, start_char=start_char, end_char=end_char)
        return outputs

    def _span_text(self, context, words, byte_begin, word_pieces, first, last, has_span):
        """The answer of pieces first..last (batch-wide piece indices) in the context's own
        characters (`final_text_graph`), and its character offsets in `context`: the graph
        form of `data.squad.answer_choice.answer_characters`, which has no twin (the graph
        keeps `get_final_text`'s position, the Python re-finds the text; CONTRIBUTING.md)."""
        num_pieces = tf.size(word_pieces.flat_values, tf.int64)
        first = tf.where(has_span, first, num_pieces)
        last = tf.where(has_span, last, num_pieces)
        # A placeholder word and piece at the end, for examples without an answer.
        all_words = tf.concat([words.flat_values, ["x"]], 0)
        piece_word = tf.concat([word_pieces.value_rowids(), [tf.size(all_words, tf.int64) - 1]], 0)
        pieces = tf.concat([word_pieces.flat_values, [0]], 0)
        first_word, last_word = tf.gather(piece_word, first), tf.gather(piece_word, last)
        word_span = tf.ragged.range(first_word, last_word + 1)
        orig_text = tf.strings.reduce_join(tf.gather(all_words, word_span), axis=1, separator=" ")
        piece_text = tf.strings.reduce_join(
            tf.gather(self._tokens, tf.gather(pieces, tf.ragged.range(first, last + 1))),
            axis=1,
            separator=" ",
        )
        # The original glues "##" pieces back, then normalises the spaces.
        piece_text = tf.strings.regex_replace(piece_text, " ##", "")
        piece_text = tf.strings.regex_replace(piece_text, "##", "")
        piece_text = tf.strings.regex_replace(tf.strings.strip(piece_text), " +", " ")
        answer, begin, end = tf.map_fn(
            lambda pair: final_text_graph(pair[0], pair[1], self.tokenizer.basic_tokens),
            (piece_text, orig_text),
            fn_output_signature=(tf.string, tf.int64, tf.int64),
        )
        # Characters: the answer's offsets in orig_text (words joined by one space) mapped to
        # the words' offsets in the context.
        word_length = tf.strings.length(tf.gather(all_words, word_span), unit="UTF8_CHAR")
        word_start = tf.cumsum(tf.cast(word_length, tf.int64) + 1, axis=1, exclusive=True)
        dense_start = word_start.to_tensor(default_value=tf.int64.max)
        first_index = (
            tf.searchsorted(dense_start, begin[:, None], side="right", out_type=tf.int64)[:, 0] - 1
        )
        last_index = (
            tf.searchsorted(dense_start, end[:, None], side="right", out_type=tf.int64)[:, 0] - 1
        )
        rows = words.value_rowids()
        context_chars = tf.strings.length(
            tf.strings.substr(
                tf.gather(context, rows),
                tf.zeros_like(byte_begin.flat_values),
                byte_begin.flat_values,
            ),
            unit="UTF8_CHAR",
        )
        char_begin = tf.concat([tf.cast(context_chars, tf.int64), [0]], 0)

        def to_context(index, position):
            word = first_word + index
            offset = position - tf.gather(dense_start, index, batch_dims=1)
            return tf.cast(tf.gather(char_begin, word) + offset, tf.int32)

        start_char = to_context(first_index, begin)
        end_char = to_context(last_index, end) + 1
        return answer, tf.where(has_span, start_char, -1), tf.where(has_span, end_char, -1)

    def signatures(self):
        """`{"serving_default": ..., "serve_examples": ...}` concrete functions."""
        text_spec = tf.TensorSpec([None], tf.string)

        @tf.function(input_signature=[text_spec, text_spec])
        def serve_text(question, context):
            return self._answer(question, context)

        spec = squad_feature_spec(self.max_seq_length, is_training=False)
        spec = {k: spec[k] for k in MODEL_INPUTS}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve_examples(examples):
            parsed = tf.io.parse_example(examples, spec)
            start_logits, end_logits = self.model(
                {k: tf.cast(v, tf.int32) for k, v in parsed.items()}, training=False
            )
            return {"start_logits": start_logits, "end_logits": end_logits}

        self.serve_text, self.serve_examples = serve_text, serve_examples
        return {"serving_default": serve_text, "serve_examples": serve_examples}
