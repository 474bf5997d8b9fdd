"""The text-in classifier SavedModel: raw sentences (or pairs) in, the answer out.

`serving_default` tokenizes in the graph (`BertPreprocessor`: ids identical to `FullTokenizer`),
cuts a long input as the run was trained to (`long_inputs`, as run_classifier's --long_inputs:
`truncate` as the original's `convert_single_example`, `head_tail` keeping the same number of
pieces from each cut text's head and tail, or `windows`: every window of every text run at
once and each text's answer aggregated from its windows', `serving.exports.long_inputs`), runs the
fine-tuned model on the batch cut to its longest sequence and returns what run_classifier
writes to test_results.tsv plus the label string:

* classification: `probabilities` float32 `[B, C]` (softmax of the logits) and `label` string
  `[B]` (the task's label of the most probable class);
* multi-label: `probabilities` float32 `[B, C]` (a sigmoid per label), `predicted` int32
  `[B, C]` (1 where the probability reaches the label's decision threshold, chosen on dev by
  run_classifier) and `labels` string `[B]` (the predicted labels joined by `,`);
* regression (STS-B): `score` float32 `[B]`.

The label names are the export's `label_names` variable (string `[C]`).

`serve_examples` takes serialized `tf.Example`s with run_classifier's record features
(`input_ids`, `input_mask`, `segment_ids`; label features are ignored), for batch pipelines that
tokenized already, and returns the same outputs, one per record: a record is one window, so
a client that windows itself aggregates the records of an example itself.
"""

import tensorflow as tf

from data.glue.long_inputs import LONG_INPUTS, WINDOW_AGGREGATIONS
from data.glue.records import classifier_feature_spec
from data.tokenization.preprocessor import BertPreprocessor
from serving.contract import MODEL_INPUTS
from serving.exports.long_inputs import aggregate_windows_graph, head_tail_inputs, window_inputs
from serving.exports.windows import first_max


def apply_thresholds_graph(probabilities, thresholds):
    """The graph twin of `data.classification.thresholds.apply_thresholds`: the multi-hot
    predictions `p >= t`, compared in float64 as there (a threshold chosen between two float32
    dev probabilities keeps them apart; in float32 it could round onto one).

    Args:
        probabilities: float32 [N, C].
        thresholds: float64 [C], one per label, or a scalar.

    Returns:
        bool [N, C].
    """
    return tf.cast(probabilities, tf.float64) >= tf.cast(thresholds, tf.float64)


class ClassifierExport(tf.Module):
    """A fine-tuned `BertClassifier` with its tokenizer, ready for `tf.saved_model.save`.

    Args:
        model: the `BertClassifier`, weights loaded.
        vocab_file: the vocabulary the model was fine-tuned with (stored as an asset).
        do_lower_case: as for run_classifier.
        max_seq_length: as for run_classifier.
        labels: the task's label strings, in class-id order (ignored for regression).
        is_regression: one output, returned as `score`.
        has_text_b: the task takes sentence pairs (`text_b` is a signature input).
        pad_to_max_seq_length: run every batch at `max_seq_length` (static shapes, e.g. for
            TPU serving) instead of at its longest sequence.
        long_inputs: "truncate", "head_tail" or "windows", as for run_classifier.
        head_tokens: head_tail: pieces kept from a cut text's head (None: a quarter).
        doc_stride: windows: pieces between window starts (None: half of each text's room).
        window_aggregation: windows: "mean", "max", "mean_logits" or "vote".
        thresholds: a multi-label model's decision threshold per label (float `[C]`); None for
            a softmax classifier.

    Raises:
        ValueError: an unknown `long_inputs` or `window_aggregation`, or windows at a
            `max_seq_length` without room for a window.
    """

    def __init__(
        self,
        model,
        vocab_file,
        do_lower_case,
        max_seq_length,
        labels,
        is_regression,
        has_text_b,
        pad_to_max_seq_length=False,
        long_inputs="truncate",
        head_tokens=None,
        doc_stride=None,
        window_aggregation="mean",
        thresholds=None,
    ):
        super().__init__(name="text_classifier")
        if thresholds is not None and long_inputs == "windows":
            raise ValueError(
                "long_inputs=windows aggregates softmax classes; a multi-label model reads "
                "truncate or head_tail inputs."
            )
        if long_inputs not in LONG_INPUTS or window_aggregation not in WINDOW_AGGREGATIONS:
            raise ValueError(
                f"Unknown long_inputs={long_inputs!r} or window_aggregation="
                f"{window_aggregation!r}: use one of {LONG_INPUTS} and of {WINDOW_AGGREGATIONS}."
            )
        smallest = 5 if has_text_b else 3
        if long_inputs == "windows" and max_seq_length < smallest:
            raise ValueError(
                f"long_inputs=windows at max_seq_length={max_seq_length} leaves no room for a "
                f"window of the text: pass at least {smallest}."
            )
        self.model = model
        self.preprocessor = BertPreprocessor(vocab_file, do_lower_case, max_seq_length)
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False)
        self.max_seq_length = max_seq_length
        self.is_regression = is_regression
        self.has_text_b = has_text_b
        self.pad_to_max_seq_length = pad_to_max_seq_length
        self._labels = tf.constant(list(labels) or [""])
        self.label_names = tf.Variable(list(labels) or [""], trainable=False, name="label_names")
        self.multi_label = thresholds is not None
        self._thresholds = tf.constant(list(thresholds) if self.multi_label else [0.0], tf.float64)
        self.long_inputs = long_inputs
        self.head_tokens = head_tokens
        self.doc_stride = doc_stride
        self.window_aggregation = window_aggregation

    def _logits(self, features):
        inputs = {k: features[k] for k in MODEL_INPUTS}
        if not self.pad_to_max_seq_length:
            # The batch's longest sequence, not max_seq_length: outputs at real positions do
            # not depend on trailing padding (as run_classifier's cut batches).
            longest = tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1))
            inputs = {k: v[:, : tf.maximum(longest, 1)] for k, v in inputs.items()}
        return self.model(inputs, training=False)

    def _answer(self, features):
        logits = self._logits(features)
        if self.is_regression:
            return {"score": logits[:, 0]}
        if self.multi_label:
            probabilities = tf.sigmoid(tf.cast(logits, tf.float32))
            chosen = apply_thresholds_graph(probabilities, self._thresholds)
            names = tf.ragged.boolean_mask(tf.broadcast_to(self._labels, tf.shape(chosen)), chosen)
            return {
                "probabilities": probabilities,
                "predicted": tf.cast(chosen, tf.int32),
                "labels": tf.strings.reduce_join(names, axis=-1, separator=","),
            }
        probabilities = tf.nn.softmax(logits, axis=-1)
        label = tf.gather(self._labels, tf.argmax(logits, axis=-1, output_type=tf.int32))
        return {"probabilities": probabilities, "label": label}

    def _answer_text(self, text_a, text_b=None):
        """The outputs for raw texts (string [B] each), long ones cut as `long_inputs` says."""
        if self.long_inputs == "truncate":
            return self._answer(self.preprocessor(text_a, text_b))
        tokenizer = self.preprocessor.tokenizer
        ids_a = tokenizer.tokenize(text_a)
        ids_b = None if text_b is None else tokenizer.tokenize(text_b)
        cls_id, sep_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
        if self.long_inputs == "head_tail":
            features = head_tail_inputs(
                ids_a, ids_b, self.max_seq_length, self.head_tokens, cls_id, sep_id
            )
            return self._answer(features)
        # Every window of the batch in one model call; each text's answer from its windows.
        features, rows = window_inputs(
            ids_a, ids_b, self.max_seq_length, self.doc_stride, cls_id, sep_id
        )
        aggregated = aggregate_windows_graph(
            self._logits(features),
            rows,
            tf.shape(text_a, out_type=tf.int64)[0],
            self.window_aggregation,
            self.is_regression,
        )
        if self.is_regression:
            return {"score": aggregated}
        label = tf.gather(self._labels, tf.cast(first_max(aggregated), tf.int32))
        return {"probabilities": aggregated, "label": label}

    def signatures(self):
        """`{"serving_default": ..., "serve_examples": ...}` concrete functions."""
        text = tf.TensorSpec([None], tf.string)
        if self.has_text_b:

            @tf.function(input_signature=[text, text])
            def serve_text(text_a, text_b):
                return self._answer_text(text_a, text_b)

        else:

            @tf.function(input_signature=[text])
            def serve_text(text_a):
                return self._answer_text(text_a)

        spec = classifier_feature_spec(self.max_seq_length)
        spec = {k: spec[k] for k in MODEL_INPUTS}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve_examples(examples):
            parsed = tf.io.parse_example(examples, spec)
            return self._answer({k: tf.cast(v, tf.int32) for k, v in parsed.items()})

        self.serve_text, self.serve_examples = serve_text, serve_examples
        return {"serving_default": serve_text, "serve_examples": serve_examples}
