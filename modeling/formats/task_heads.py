"""Fine-tuned task heads in converted weights: run_classifier's, run_ner's and run_squad's.

A fine-tuned checkpoint holds the encoder and one task head. The original layout and this
project's name them (each `output_weights` is `[C, H]`, already torch's `[out, in]`):

| head | original names | Hugging Face class and names |
|---|---|---|
| `classifier` | `output_weights [C, H]`, `output_bias [C]` | `BertForSequenceClassification`: `classifier.{weight,bias}` |
| `ner` | `cls/ner/output_weights [C, H]`, `cls/ner/output_bias [C]` | `BertForTokenClassification`: `classifier.{weight,bias}` |
| `squad` | `cls/squad/output_weights [2, H]`, `cls/squad/output_bias [2]` | `BertForQuestionAnswering`: `qa_outputs.{weight,bias}` |

The token and span classes of Hugging Face have no pooler, and `classifier.*` names both a sequence
and a token classifier, so the HF side is told apart by `config.json`'s `architectures`. This
module is TensorFlow-free.
"""

import dataclasses

import numpy as np
from absl import logging


@dataclasses.dataclass(frozen=True)
class TaskHead:
    """One fine-tuned head.

    Attributes:
        name: "classifier", "ner" or "squad" (the export_model.py `--task` it serves).
        prefix: the scope of its two original names (`output_weights`, `output_bias`).
        hf_prefix: the scope of its HF names (`weight`, `bias`).
        hf_architecture: the HF class holding it.
        runner: the runner that trains it, for messages.
        outputs: the fixed number of outputs, or None (one per label).
    """

    name: str
    prefix: str
    hf_prefix: str
    hf_architecture: str
    runner: str
    outputs: int | None = None

    @property
    def names(self):
        """Its original (weights, bias) names."""
        return f"{self.prefix}output_weights", f"{self.prefix}output_bias"

    @property
    def hf_names(self):
        """Its HF (weight, bias) names."""
        return f"{self.hf_prefix}weight", f"{self.hf_prefix}bias"

    @property
    def has_pooler(self):
        """Whether the HF class holds `bert.pooler.*` (only the sequence classifier uses it)."""
        return self.name == "classifier"


CLASSIFIER = TaskHead(
    "classifier", "", "classifier.", "BertForSequenceClassification", "run_classifier.py"
)
NER = TaskHead("ner", "cls/ner/", "classifier.", "BertForTokenClassification", "run_ner.py")
SQUAD = TaskHead(
    "squad", "cls/squad/", "qa_outputs.", "BertForQuestionAnswering", "run_squad.py", outputs=2
)
HEADS = (CLASSIFIER, NER, SQUAD)
# The pooler's names: HF's token and span classes have none, so reading one of them fills it.
POOLER_NAMES = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")


def is_task_head_name(name):
    """True for an original name of any task head."""
    return any(name in head.names for head in HEADS)


def head_in(arrays):
    """The task head whose names `arrays` hold, or None.

    Raises:
        ValueError: for two heads at once, or one with only one of its two tensors.
    """
    found = [head for head in HEADS if any(name in arrays for name in head.names)]
    if len(found) > 1:
        raise ValueError(
            "The weights hold more than one task head ("
            + ", ".join(f"{h.name}: {h.names[0]}" for h in found)
            + "); a fine-tuned model has one."
        )
    if found:
        missing = [name for name in found[0].names if name not in arrays]
        if missing:
            raise ValueError(
                f"The {found[0].name} head is incomplete: {missing[0]} is missing beside "
                f"{[n for n in found[0].names if n in arrays][0]}."
            )
    return found[0] if found else None


def without(arrays, output_format=None):
    """`arrays` without their task head; naming `output_format` logs that it is left out (only
    tf1 and hf hold one)."""
    head = head_in(arrays)
    if head is None:
        return arrays
    if output_format is not None:
        logging.warning(
            "The %s head (%s) is left out: the %s format holds the encoder only. Convert to tf1 "
            "or hf to keep it.",
            head.name,
            ", ".join(head.names),
            output_format,
        )
    return {n: v for n, v in arrays.items() if n not in head.names}


def problems(arrays, hidden_size):
    """The task head of `arrays` and lines naming what is wrong with it, in the style of
    `tf1_checkpoint.check_arrays_match` (one error lists everything).

    Returns:
        (the head or None, list of lines): two heads, a missing half, a shape that does not fit
        `hidden_size`.
    """
    found = [head for head in HEADS if any(name in arrays for name in head.names)]
    if len(found) > 1:
        names = ", ".join(f"{h.name} ({h.names[0]})" for h in found)
        return None, [f"  more than one task head: {names}; a fine-tuned model has one"]
    if not found:
        return None, []
    head = found[0]
    weights, bias = (np.shape(arrays[n]) if n in arrays else None for n in head.names)
    count = head.outputs or (weights[0] if weights and len(weights) == 2 else None)
    lines = []
    if weights is None:
        lines.append(f"  missing in checkpoint: {head.names[0]} [{count or 'C'}, {hidden_size}]")
    elif len(weights) != 2 or weights[1] != hidden_size or weights[0] != count:
        lines.append(
            f"  shape mismatch: {head.names[0]}: {list(weights)}, want "
            f"[{count or 'C'}, {hidden_size}]"
        )
    if bias is None:
        lines.append(f"  missing in checkpoint: {head.names[1]} [{count or 'C'}]")
    elif count is not None and tuple(bias) != (count,):
        lines.append(f"  shape mismatch: {head.names[1]}: {list(bias)}, want [{count}]")
    return head, lines


def num_labels(head, arrays):
    """The number of outputs of `head` in `arrays` (C of `output_weights [C, H]`)."""
    return int(np.shape(arrays[head.names[0]])[0])


def hf_head_of(hf_config, tensor_names):
    """The task head an HF `config.json` and its tensor names describe, or None.

    Raises:
        ValueError: for `classifier.*` tensors whose `architectures` say neither a sequence nor
            a token classifier.
    """
    architectures = hf_config.get("architectures") or []
    for head in HEADS:
        if head.hf_architecture in architectures:
            return head if head.hf_names[0] in tensor_names else None
    if SQUAD.hf_names[0] in tensor_names:
        return SQUAD
    if CLASSIFIER.hf_names[0] in tensor_names:
        raise ValueError(
            f"config.json's architectures {architectures} do not say whether classifier.weight "
            f"is a sequence classifier ({CLASSIFIER.hf_architecture}) or a token classifier "
            f'({NER.hf_architecture}): set "architectures" to the class the model was trained as.'
        )
    return None


def hf_label_fields(head, count, labels=None, problem_type=None):
    """The `config.json` fields of the head's labels.

    Args:
        head: a `TaskHead`.
        count: its number of outputs.
        labels: the label of each output (class id order), or None for HF's `LABEL_i`.
        problem_type: a classifier's HF `problem_type` ("single_label_classification",
            "multi_label_classification" or "regression"); None: "regression" for one output.

    Returns:
        dict with `id2label` and `label2id` (none for the span head), and `problem_type`
        (given, or "regression" for a one-output classifier: run_classifier's STS-B).
    """
    if head is SQUAD:
        return {}
    names = list(labels) if labels is not None else [f"LABEL_{i}" for i in range(count)]
    if len(names) != count:
        raise ValueError(f"{len(names)} labels given for a {head.name} head of {count} outputs.")
    fields = {
        "id2label": {str(i): label for i, label in enumerate(names)},
        "label2id": {label: i for i, label in enumerate(names)},
    }
    if head is CLASSIFIER and problem_type:
        fields["problem_type"] = problem_type
    elif head is CLASSIFIER and count == 1:
        fields["problem_type"] = "regression"
    return fields


def hf_labels(hf_config, count):
    """The labels of an HF config in class id order, or None when it has HF's defaults only."""
    id2label = hf_config.get("id2label") or {}
    labels = [id2label.get(str(i), id2label.get(i)) for i in range(count)]
    if any(label is None for label in labels):
        return None
    if labels == [f"LABEL_{i}" for i in range(count)]:
        return None
    return [str(label) for label in labels]
