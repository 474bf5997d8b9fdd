"""What a TFLite export's answers need around the network: the runners' own input and answer
code (data/), so that an int8 model answers as run_classifier.py, run_ner.py and run_squad.py
(and the text-in SavedModels) would.

Each task's class (`LITE_IO`) turns checked instances into `Windows` (`windows`): the
network's inputs, `{"input_ids", "input_mask", "segment_ids"}` int lists of each window's real
length, with what its answers need later (a dataclass per task); `answers(windows, outputs)`
turns the network's outputs per window back into answers. They keep nothing between calls, so
one serves concurrent requests.

TensorFlow-free (with data/'s input and answer code), so a TFLite predictor starts without it.
"""

import collections
import dataclasses
import re

import numpy as np

from data.classification.thresholds import apply_thresholds
from data.glue.features import NUM_LOGGED, convert_single_example
from data.glue.long_inputs import aggregate_windows, convert_long_examples
from data.glue.processor_base import InputExample
from data.ner.conll import Sentence, Word
from data.ner.features import build_windows, word_predictions
from data.squad.answer_choice import answer_characters, no_answer, word_starts
from data.squad.examples import SquadExample, split_context
from data.squad.features import convert_examples_to_features
from data.squad.postprocess import RawResult, best_answer
from serving.contract import NER_WORD_SEPARATORS, instance_keys


def _trimmed(input_ids, input_mask, segment_ids):
    length = int(sum(input_mask))
    return {
        "input_ids": list(input_ids[:length]),
        "input_mask": list(input_mask[:length]),
        "segment_ids": list(segment_ids[:length]),
    }


@dataclasses.dataclass
class Windows:
    """Instances as the network's inputs.

    Attributes:
        ids: one dict per window: "input_ids", "input_mask" and "segment_ids", int lists of the
            window's real length.
        num_instances: how many instances they come from.
    """

    ids: list
    num_instances: int


@dataclasses.dataclass
class ClassifierWindows(Windows):
    """Attributes: owners: the instance of each window (one each, or several with windows)."""

    owners: list


@dataclasses.dataclass
class NerWindows(Windows):
    """Attributes: sentences: each instance's `data.ner.conll.Sentence`; windows: their
    `data.ner.features.NerWindow`s, one per `ids` entry."""

    sentences: list
    windows: list


@dataclasses.dataclass
class SquadWindows(Windows):
    """Attributes: word_starts: each context's word starts
    (`data.squad.answer_choice.word_starts`); examples: each instance's `SquadExample`;
    features: their `SquadFeatures`, one per `ids` entry."""

    word_starts: list
    examples: list
    features: list


class LiteClassifierIO:
    """A classifier's sentences (or pairs) in; label and probabilities (or a score) out, as
    run_classifier's test_results.tsv."""

    def __init__(self, config, tokenizer):
        self.config, self.tokenizer = config, tokenizer
        self.labels = config["labels"]
        self.is_regression = config["is_regression"]
        self.keys = instance_keys("classifier", config["has_text_b"])

    def _examples(self, instances):
        # Any known label: the records need one, the answers never read it.
        label = "0" if self.is_regression else self.labels[0]
        if self.config.get("multi_label"):
            label = ()
        return [
            InputExample(
                str(i), x["text_a"], x["text_b"] if self.config["has_text_b"] else None, label
            )
            for i, x in enumerate(instances)
        ]

    def windows(self, instances):
        """`ClassifierWindows` of checked instances."""
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
        ids = [_trimmed(f.input_ids, f.input_mask, f.segment_ids) for f in features]
        return ClassifierWindows(ids, len(instances), owners)

    def answers(self, windows, outputs):
        """One answer per instance from the network's `logits` `[C]` per window."""
        logits = np.stack([o["logits"] for o in outputs]).astype(np.float64)
        if self.config.get("multi_label"):
            # One window per instance (truncate or head_tail): a sigmoid per label, the labels
            # at or above their thresholds (jobs.classifier_run chose them on dev).
            probabilities = 1.0 / (1.0 + np.exp(-logits))
            chosen = apply_thresholds(probabilities, self.config["thresholds"])
            return [
                {
                    "labels": [self.labels[i] for i in np.flatnonzero(row)],
                    "probabilities": [float(x) for x in p],
                }
                for row, p in zip(chosen, probabilities, strict=True)
            ]
        merged = aggregate_windows(
            logits,
            np.asarray(windows.owners),
            windows.num_instances,
            self.config.get("window_aggregation", "mean"),
            self.is_regression,
        )
        if self.is_regression:
            return [{"score": float(s)} for s in np.reshape(merged, [-1])]
        return [
            {"label": self.labels[int(np.argmax(p))], "probabilities": [float(x) for x in p]}
            for p in merged
        ]


class LiteNerIO:
    """NER's sentences in (words split on spaces and tabs); one tag per word out."""

    def __init__(self, config, tokenizer):
        self.config, self.tokenizer = config, tokenizer
        self.labels = config["labels"]
        self.keys = instance_keys("ner")

    def windows(self, instances):
        """`NerWindows` of checked instances."""
        sentences = [
            Sentence([Word(w, None, 0) for w in re.split(NER_WORD_SEPARATORS, x["text"]) if w], 0)
            for x in instances
        ]
        windows = build_windows(
            sentences,
            self.tokenizer,
            None,
            self.config["max_seq_length"],
            self.config["doc_stride"],
        )
        ids = [_trimmed(w.input_ids, w.input_mask, w.segment_ids) for w in windows]
        return NerWindows(ids, len(instances), sentences, windows)

    def answers(self, windows, outputs):
        """One answer per instance from the network's `logits` `[T, L]` per window."""
        length = self.config["max_seq_length"]
        predicted = np.zeros([len(outputs), length], np.int64)
        for row, output in zip(predicted, outputs, strict=True):
            row[: len(output["logits"])] = np.argmax(output["logits"], axis=-1)
        tags = word_predictions(windows.windows, predicted, self.labels)
        return [
            {
                "words": [w.text for w in sentence.words],
                "tags": [tags[(i, j)] for j in range(len(sentence.words))],
            }
            for i, sentence in enumerate(windows.sentences)
        ]


class LiteSquadIO:
    """A SQuAD question and its context in; run_squad's answer and its characters in the
    context out."""

    def __init__(self, config, tokenizer):
        self.config, self.tokenizer = config, tokenizer
        self.keys = instance_keys("squad")

    def windows(self, instances):
        """`SquadWindows` of checked instances."""
        starts, examples = [], []
        for i, x in enumerate(instances):
            words, char_to_word = split_context(x["context"])
            starts.append(word_starts(char_to_word))
            examples.append(SquadExample(str(i), x["question"], words))
        features = convert_examples_to_features(
            examples,
            self.tokenizer,
            self.config["max_seq_length"],
            self.config["doc_stride"],
            self.config["max_query_length"],
            is_training=False,
            log=False,
        )
        ids = [_trimmed(f.input_ids, f.input_mask, f.segment_ids) for f in features]
        return SquadWindows(ids, len(instances), starts, examples, features)

    def answers(self, windows, outputs):
        """One answer per instance from the network's `start_logits` and `end_logits` `[T]`
        per window (data.squad.postprocess's choice, data.squad.answer_choice's rules)."""
        windows_of = collections.defaultdict(list)
        for i, feature in enumerate(windows.features):
            windows_of[feature.example_index].append(i)
        answers = []
        with_negative = self.config["version_2_with_negative"]
        for index, example in enumerate(windows.examples):
            mine = windows_of[index]
            features = [windows.features[i] for i in mine]
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
                unanswered, probability = no_answer(
                    null_score, score if text else None, self.config["null_score_diff_threshold"]
                )
                if unanswered:
                    text = ""
                answer.update(answer=text, no_answer_probability=probability)
            begin, end = answer_characters(
                windows.word_starts[index], example.doc_tokens, words, text
            )
            answer.update(start_char=begin, end_char=end)
            answers.append(answer)
        return answers


class LiteEncoderIO(LiteClassifierIO):
    """The encoder's sentences (or pairs) in; the pooled output out."""

    def __init__(self, config, tokenizer):
        config = {
            **config,
            "labels": [],
            "is_regression": True,
            "long_inputs": "truncate",
            "has_text_b": False,
        }
        super().__init__(config, tokenizer)
        self.keys = instance_keys("encoder")

    def _examples(self, instances):
        return [
            InputExample(str(i), x["text"], x.get("text_b"), "0") for i, x in enumerate(instances)
        ]

    def answers(self, windows, outputs):
        """One answer per instance from the network's `pooled_output` `[H]`."""
        return [{"pooled_output": [float(x) for x in o["pooled_output"]]} for o in outputs]


# Each task's input and answer code, by the task serving.json names.
LITE_IO = {
    "classifier": LiteClassifierIO,
    "ner": LiteNerIO,
    "squad": LiteSquadIO,
    "encoder": LiteEncoderIO,
}
