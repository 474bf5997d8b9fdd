"""The serving contract: what every predictor of an export promises, the one check of the
instances it takes, and what the exports and the predictors must read alike.

A predictor (`serving.saved_model_predictor.SavedModelPredictor`,
`serving.lite_predictor.LitePredictor`; `serving.predictor.load_predictor` picks one) meets
`Predictor`: its `task`, its `precision`, the keys of its instances and `predict`. serve.py's
HTTP server (`serving.http_server`), the benchmarks and the tests read nothing else of it.

`MODEL_INPUTS` names the network's inputs, which an export takes and a predictor feeds;
`NER_WORD_SEPARATORS` splits an NER instance into words in both kinds of export.
`INSTANCE_KEYS` is the one table of the keys each task's instances take, and
`check_instances` the one check of them: the server runs it on each request (so a bad request
gets its own 400 before it shares a batch) and each predictor on each `predict` call.

TensorFlow-free: serve.py's start and the TFLite path import it before (or without)
TensorFlow.
"""

import dataclasses
from typing import Protocol

# The network's inputs in every export, int `[batch, length]` each: the TFLite signature's,
# serving.json's "inputs", the record features `serve_examples` reads.
MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")

# How an NER instance's "text" becomes words, in both kinds of export: split on spaces, tabs
# and line breaks (as run_ner's CoNLL reader splits its columns), empty words dropped.
NER_WORD_SEPARATORS = "[ \t\r\n]+"


@dataclasses.dataclass(frozen=True)
class InstanceKeys:
    """The keys of one task's instances, each a string.

    Attributes:
        required: keys every instance gives, in the order messages and metadata name them.
        optional: keys an instance may add.
    """

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


# A classifier takes `text_b` exactly when it was trained on pairs (`pairs`); the encoder
# takes a second text when one is given.
INSTANCE_KEYS = {
    ("classifier", False): InstanceKeys(("text_a",)),
    ("classifier", True): InstanceKeys(("text_a", "text_b")),
    ("ner", False): InstanceKeys(("text",)),
    ("squad", False): InstanceKeys(("question", "context")),
    ("encoder", False): InstanceKeys(("text",), ("text_b",)),
}


def instance_keys(task, pairs=False):
    """The `InstanceKeys` of `task` ("classifier", "ner", "squad" or "encoder").

    Args:
        task: the export's task.
        pairs: a classifier trained on sentence pairs (ignored for the other tasks).
    """
    return INSTANCE_KEYS[(task, bool(pairs) and task == "classifier")]


def keys_of(predictor):
    """The `InstanceKeys` of a predictor: its own, or, for an object that names only its task
    (a stand-in in a test or a benchmark), its task's in `INSTANCE_KEYS`."""
    if getattr(predictor, "instance_keys", None) is None:
        return instance_keys(predictor.task)
    return InstanceKeys(
        tuple(predictor.instance_keys), tuple(getattr(predictor, "optional_instance_keys", ()))
    )


class Predictor(Protocol):
    """Answers of one export as plain dicts (the table of `serving.predictor`).

    Attributes:
        task: "classifier", "ner", "squad" or "encoder".
        precision: what the model computes in: "float32", "bfloat16", "float16" or "int8".
        instance_keys: the keys every instance gives (`InstanceKeys.required`).
        optional_instance_keys: the keys an instance may add (`InstanceKeys.optional`).
    """

    task: str
    precision: str
    instance_keys: tuple[str, ...]
    optional_instance_keys: tuple[str, ...]

    def predict(self, instances: list[dict]) -> list[dict]:
        """The answers to `instances`, one dict each, in order.

        Raises:
            ValueError: an instance `check_instances` refuses.
        """


def _quoted(keys):
    return " and ".join(f'"{k}"' for k in keys)


def instance_shape(keys):
    """How a request names its instances, for the sentences that refuse one."""
    example = ", ".join(f'"{k}": "..."' for k in keys.required)
    return f'{{"instances": [{{{example}}}, ...]}} or one instance {{{example}}}'


def check_instances(instances, keys, single=False):
    """Refuses instances that are not dicts of `keys` with string values.

    Args:
        instances: the instances of a request or a `predict` call.
        keys: their task's `InstanceKeys`.
        single: the request gave one instance object (the sentences say "The instance").

    Raises:
        ValueError: with the sentence for the client: the instance, the key and the fix.
    """
    shape = instance_shape(keys)
    if not isinstance(instances, list) or not instances:
        raise ValueError(f'"instances" must be a non-empty list of objects: send {shape}.')
    allowed = set(keys.required) | set(keys.optional)
    optional = f" and optionally {_quoted(keys.optional)}" if keys.optional else ""
    for index, instance in enumerate(instances):
        where = "The instance" if single else f"Instance {index}"
        if not isinstance(instance, dict):
            raise ValueError(f"{where} is a JSON {type(instance).__name__}: send {shape}.")
        for key in keys.required:
            if key not in instance:
                raise ValueError(
                    f'{where} has no "{key}": give every instance {_quoted(keys.required)} '
                    f"(strings){optional}."
                )
        for key, value in instance.items():
            if key not in allowed:
                raise ValueError(
                    f'{where} has the unknown key "{key}": this model takes '
                    f"{_quoted(keys.required + keys.optional)}."
                )
            if not isinstance(value, str):
                raise ValueError(
                    f'{where}\'s "{key}" is a JSON {type(value).__name__}: give a string.'
                )
