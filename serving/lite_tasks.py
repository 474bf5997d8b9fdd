"""What a TFLite export's answers need around the network: the runners' own input and answer
code (data/), so that an int8 model answers as run_classifier.py, run_ner.py and run_squad.py
(and the text-in SavedModels) would.

Each task's `windows(instances)` returns the windows, `{"input_ids", "input_mask",
"segment_ids"}` int lists of each window's real length, with what the answers need later (a
state: the instance of each window, the examples); `answers(instances, state, outputs)` turns
the network's outputs per window back into answers. Tasks keep nothing between calls, so one
serves concurrent requests.
"""

import collections
import re

import numpy as np

from data.glue.features import NUM_LOGGED, convert_single_example
from data.glue.long_inputs import aggregate_windows, convert_long_examples
from data.glue.processor_base import InputExample
from data.ner.conll import Sentence, Word
from data.ner.features import build_windows, word_predictions
from data.squad.examples import SquadExample, split_context
from data.squad.features import convert_examples_to_features
from data.squad.postprocess import RawResult, best_answer


def _trimmed(input_ids, input_mask, segment_ids):
    length = int(sum(input_mask))
    return {
        "input_ids": list(input_ids[:length]),
        "input_mask": list(input_mask[:length]),
        "segment_ids": list(segment_ids[:length]),
    }


def _text(instance, key, required=True):
    value = instance.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValueError(f"Each instance needs {key!r} as a string, got {value!r}.")
    return value


class ClassifierTask:
    """Sentences (or pairs) in; label and probabilities (or a score) out, as test_results.tsv."""

    def __init__(self, config, tokenizer):
        self.config, self.tokenizer = config, tokenizer
        self.labels = config["labels"]
        self.is_regression = config["is_regression"]
        self.keys = ("text_a", "text_b") if config["has_text_b"] else ("text_a",)

    def _examples(self, instances):
        # Any known label: the records need one, the answers never read it.
        label = "0" if self.is_regression else self.labels[0]
        if self.config.get("multi_label"):
            label = ()
        return [
            InputExample(
                str(i),
                _text(x, "text_a"),
                _text(x, "text_b") if self.config["has_text_b"] else None,
                label,
            )
            for i, x in enumerate(instances)
        ]

    def windows(self, instances):
        """(windows, the instance of each window)."""
        examples = self._examples(instances)
        labels, length = self.labels, self.config["max_seq_length"]
        if self.config["long_inputs"] == "truncate":
            features = [
                convert_single_example(
                    NUM_LOGGED, e, labels, length, self.tokenizer, self.is_regression
                )
                for e in examples
            ]
            owners = list(range(len(examples)))
        else:
            features, owners = convert_long_examples(
                examples,
                labels,
                length,
                self.tokenizer,
                self.is_regression,
                self.config["long_inputs"],
                self.config.get("head_tokens"),
                self.config.get("doc_stride"),
                log=False,
            )
        return [_trimmed(f.input_ids, f.input_mask, f.segment_ids) for f in features], owners

    def answers(self, instances, owners, outputs):
        logits = np.stack([o["logits"] for o in outputs]).astype(np.float64)
        if self.config.get("multi_label"):
            # One window per instance (truncate or head_tail): a sigmoid per label, the labels
            # at or above their thresholds (jobs.classifier_run chose them on dev).
            probabilities = 1.0 / (1.0 + np.exp(-logits))
            chosen = probabilities >= np.asarray(self.config["thresholds"])
            return [
                {
                    "labels": [self.labels[i] for i in np.flatnonzero(row)],
                    "probabilities": [float(x) for x in p],
                }
                for row, p in zip(chosen, probabilities, strict=True)
            ]
        merged = aggregate_windows(
            logits,
            np.asarray(owners),
            len(instances),
            self.config.get("window_aggregation", "mean"),
            self.is_regression,
        )
        if self.is_regression:
            return [{"score": float(s)} for s in np.reshape(merged, [-1])]
        return [
            {"label": self.labels[int(np.argmax(p))], "probabilities": [float(x) for x in p]}
            for p in merged
        ]


class NerTask:
    """Sentences in (words split on spaces and tabs); one tag per word out."""

    keys = ("text",)

    def __init__(self, config, tokenizer):
        self.config, self.tokenizer = config, tokenizer
        self.labels = config["labels"]

    def windows(self, instances):
        sentences = [
            # The NER SavedModel's words: split on spaces, tabs and line breaks only.
            Sentence([Word(w, None, 0) for w in re.split("[ \t\r\n]+", _text(x, "text")) if w], 0)
            for x in instances
        ]
        windows = build_windows(
            sentences,
            self.tokenizer,
            None,
            self.config["max_seq_length"],
            self.config["doc_stride"],
        )
        trimmed = [_trimmed(w.input_ids, w.input_mask, w.segment_ids) for w in windows]
        return trimmed, (sentences, windows)

    def answers(self, instances, state, outputs):
        sentences, windows = state
        length = self.config["max_seq_length"]
        predicted = np.zeros([len(outputs), length], np.int64)
        for row, output in zip(predicted, outputs, strict=True):
            row[: len(output["logits"])] = np.argmax(output["logits"], axis=-1)
        tags = word_predictions(windows, predicted, self.labels)
        return [
            {
                "words": [w.text for w in sentence.words],
                "tags": [tags[(i, j)] for j in range(len(sentence.words))],
            }
            for i, sentence in enumerate(sentences)
        ]


class SquadTask:
    """A question and its context in; run_squad's answer and its characters in the context out."""

    keys = ("question", "context")

    def __init__(self, config, tokenizer):
        self.config, self.tokenizer = config, tokenizer

    def windows(self, instances):
        contexts, examples = [], []
        for i, x in enumerate(instances):
            context = _text(x, "context")
            words, char_to_word = split_context(context)
            # Each word's first character: where the character-to-word map moves on.
            starts = [
                c
                for c, w in enumerate(char_to_word)
                if w >= 0 and (c == 0 or char_to_word[c - 1] != w)
            ]
            contexts.append(starts)
            examples.append(SquadExample(str(i), _text(x, "question"), words))
        features = convert_examples_to_features(
            examples,
            self.tokenizer,
            self.config["max_seq_length"],
            self.config["doc_stride"],
            self.config["max_query_length"],
            is_training=False,
            log=False,
        )
        trimmed = [_trimmed(f.input_ids, f.input_mask, f.segment_ids) for f in features]
        return trimmed, (contexts, examples, features)

    def answers(self, instances, state, outputs):
        word_starts, examples, all_features = state
        windows_of = collections.defaultdict(list)
        for i, feature in enumerate(all_features):
            windows_of[feature.example_index].append(i)
        answers = []
        with_negative = self.config["version_2_with_negative"]
        for index, example in enumerate(examples):
            mine = windows_of[index]
            features = [all_features[i] for i in mine]
            results = {
                f.unique_id: RawResult(
                    f.unique_id, outputs[i]["start_logits"], outputs[i]["end_logits"]
                )
                for i, f in zip(mine, features, strict=True)
            }
            text, score, null_score, words = best_answer(
                example,
                features,
                results,
                self.config["n_best_size"],
                self.config["max_answer_length"],
                self.config["do_lower_case"],
                with_negative,
            )
            answer = {"answer": text, "score": float(score)}
            if with_negative:
                diff = null_score - score
                if diff > self.config["null_score_diff_threshold"]:
                    text = ""
                answer.update(answer=text, no_answer_probability=float(1.0 / (1.0 + np.exp(-diff))))
            begin, end = _characters(word_starts[index], example.doc_tokens, words, text)
            answer.update(start_char=begin, end_char=end)
            answers.append(answer)
        return answers


def _characters(word_starts, doc_tokens, words, answer):
    """(first character, one past the last) of `answer` in the context, (-1, -1) without one.

    The answer is text of the span's words joined by single spaces (get_final_text's
    `orig_text`), so its offset there maps through each word's first character in the context
    (`word_starts`)."""
    if not answer or words is None:
        return -1, -1
    first, last = words
    span = doc_tokens[first : last + 1]
    at = " ".join(span).find(answer)
    if at < 0:
        return -1, -1
    joined_starts = np.cumsum([0] + [len(w) + 1 for w in span[:-1]])

    def to_context(offset):
        k = int(np.searchsorted(joined_starts, offset, side="right")) - 1
        return word_starts[first + k] + offset - int(joined_starts[k])

    return to_context(at), to_context(at + len(answer) - 1) + 1


class EncoderTask(ClassifierTask):
    """Sentences (or pairs) in; the pooled output out."""

    optional_keys = ("text_b",)

    def __init__(self, config, tokenizer):
        config = {
            **config,
            "labels": [],
            "is_regression": True,
            "long_inputs": "truncate",
            "has_text_b": False,
        }
        super().__init__(config, tokenizer)
        self.keys = ("text",)

    def _examples(self, instances):
        return [
            InputExample(str(i), _text(x, "text"), _text(x, "text_b", False), "0")
            for i, x in enumerate(instances)
        ]

    def answers(self, instances, owners, outputs):
        return [{"pooled_output": [float(x) for x in o["pooled_output"]]} for o in outputs]


TASKS = {
    "classifier": ClassifierTask,
    "ner": NerTask,
    "squad": SquadTask,
    "encoder": EncoderTask,
}
