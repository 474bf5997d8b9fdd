"""Answers of a text-in SavedModel (export_model.py --task=classifier, ner or squad) as plain
dicts, the table of `serving.predictor`.

The task comes from the inputs of the export's `serving_default` signature (`text_a` [and
`text_b`]: classifier; `text`: ner; `question` and `context`: squad) and the precision from its
graph: an export of `--precision=mixed_bfloat16` computes in bfloat16 (`mixed_float16`: float16),
which its functions' ops record. Loading needs `tensorflow_text` (the WordPiece op), imported
here.
"""

import os

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece op the exports use)
from absl import logging
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2

from fileio.errors import UserError, first_line
from serving.contract import INSTANCE_KEYS, check_instances

_SAVED_MODEL = "saved_model.pb"
_SIGNATURE = "serving_default"
# Each text-in export's instance keys by the (sorted) inputs of its serving_default
# signature: its instances' keys are its inputs. (The encoder's TF Hub export takes ids.)
_TASKS = {
    tuple(sorted(keys.required)): (task, keys)
    for (task, _), keys in INSTANCE_KEYS.items()
    if task in ("classifier", "ner", "squad")
}
_FIX = "pass the --export_dir that export_model.py --task=classifier, ner or squad wrote"
_DAMAGED_FIX = "export the model again with export_model.py, or restore the folder from a good copy"


def _read_meta_graph(export_dir):
    """The export's MetaGraphDef, or the UserError saying why `export_dir` holds none."""
    path = os.path.join(export_dir, _SAVED_MODEL)
    if not tf.io.gfile.isdir(export_dir):
        raise UserError(f"The model folder {export_dir} does not exist: {_FIX}.")
    if not tf.io.gfile.exists(path):
        raise UserError(f"{export_dir} holds no {_SAVED_MODEL}, so it is no export: {_FIX}.")
    saved_model = saved_model_pb2.SavedModel()
    try:
        with tf.io.gfile.GFile(path, "rb") as f:
            saved_model.ParseFromString(f.read())
    except (DecodeError, tf.errors.OpError, OSError) as err:
        raise UserError(f"{path} is damaged ({first_line(err)}): {_DAMAGED_FIX}.") from None
    if len(saved_model.meta_graphs) != 1:
        raise UserError(f"{path} is damaged (it holds no model): {_DAMAGED_FIX}.")
    return saved_model.meta_graphs[0]


def _task(export_dir, meta_graph):
    signature = meta_graph.signature_def.get(_SIGNATURE)
    inputs = tuple(sorted(signature.inputs)) if signature is not None else ()
    if inputs not in _TASKS:
        raise UserError(
            f"{export_dir} is a SavedModel without text inputs (serving_default takes "
            f"{list(inputs) or 'nothing'}; a TF Hub encoder or pre-training export takes ids): "
            f"{_FIX}."
        )
    return _TASKS[inputs]


def _precision(meta_graph):
    """ "bfloat16" or "float16" if any op of the export's functions computes in it, else
    "float32" (mixed precision keeps weights float32 and casts to the compute dtype)."""
    found = set()
    wanted = {tf.bfloat16.as_datatype_enum: "bfloat16", tf.float16.as_datatype_enum: "float16"}
    for function in meta_graph.graph_def.library.function:
        for node in function.node_def:
            for value in node.attr.values():
                if value.type in wanted:
                    found.add(wanted[value.type])
    return "bfloat16" if "bfloat16" in found else "float16" if found else "float32"


def set_cpu_threads(num_threads):
    """TensorFlow's intra- and inter-op thread pools at `num_threads` (None: its default).

    It must run before TensorFlow runs any op; later, the pools are fixed and it only warns.
    """
    if not num_threads:
        return
    try:
        tf.config.threading.set_intra_op_parallelism_threads(num_threads)
        tf.config.threading.set_inter_op_parallelism_threads(num_threads)
    except RuntimeError:
        logging.warning(
            "num_threads=%d not applied: TensorFlow already runs with its thread pools.",
            num_threads,
        )


def _text(value):
    return value.decode("utf-8", errors="replace")


def _classifier_answers(outputs, count, names=None):
    if "score" in outputs:
        return [{"score": float(s)} for s in outputs["score"][:count]]
    if "predicted" in outputs:
        # Multi-label: the labels at or above their thresholds, with every probability.
        return [
            {
                "labels": [names[i] for i in np.flatnonzero(chosen)],
                "probabilities": probabilities.tolist(),
            }
            for chosen, probabilities in zip(
                outputs["predicted"], outputs["probabilities"], strict=True
            )
        ]
    return [
        {"label": _text(label), "probabilities": probabilities.tolist()}
        for label, probabilities in zip(outputs["label"], outputs["probabilities"], strict=True)
    ]


def _ner_answers(outputs, count, names=None):
    answers = []
    for words, tags, n in zip(outputs["words"], outputs["tags"], outputs["num_words"], strict=True):
        answers.append(
            {"words": [_text(w) for w in words[:n]], "tags": [_text(t) for t in tags[:n]]}
        )
    return answers


def _squad_answers(outputs, count, names=None):
    answers = []
    for i in range(count):
        answer = {
            "answer": _text(outputs["answer"][i]),
            "start_char": int(outputs["start_char"][i]),
            "end_char": int(outputs["end_char"][i]),
            "score": float(outputs["score"][i]),
        }
        if "no_answer_probability" in outputs:
            answer["no_answer_probability"] = float(outputs["no_answer_probability"][i])
        answers.append(answer)
    return answers


_ANSWERS = {"classifier": _classifier_answers, "ner": _ner_answers, "squad": _squad_answers}


class SavedModelPredictor:
    """A text-in SavedModel of export_model.py, answering plain dicts: a
    `serving.contract.Predictor`.

    Args:
        export_dir: the folder export_model.py wrote (--task=classifier, ner or squad; float32,
            bfloat16 or float16 compute).
        num_threads: CPU threads for TensorFlow's op pools (None: its default); applied only if
            TensorFlow has run nothing in this process yet.

    Attributes:
        task: "classifier", "ner" or "squad".
        precision: "float32", "bfloat16" or "float16": what the model computes in.
        instance_keys: the keys every instance needs (string values), e.g. ("text_a", "text_b"):
            the signature's inputs (`serving.contract.INSTANCE_KEYS`).
        optional_instance_keys: () (a text-in export takes no optional key).
        signature: the export's `serving_default` function (string tensors in, tensors out).

    Raises:
        UserError: `export_dir` is not a text-in export, or its files are damaged.
    """

    def __init__(self, export_dir, num_threads=None):
        set_cpu_threads(num_threads)
        self.export_dir = str(export_dir)
        meta_graph = _read_meta_graph(self.export_dir)
        self.task, self._keys = _task(self.export_dir, meta_graph)
        self.instance_keys = self._keys.required
        self.optional_instance_keys = self._keys.optional
        self.precision = _precision(meta_graph)
        try:
            self._model = tf.saved_model.load(self.export_dir)
            self.signature = self._model.signatures[_SIGNATURE]
        except Exception as err:  # noqa: BLE001 - a damaged file fails in many ways
            raise UserError(
                f"{self.export_dir} cannot be loaded ({type(err).__name__}: "
                f"{first_line(err)}); its variables/ or assets/ are damaged or missing: "
                f"{_DAMAGED_FIX}."
            ) from None
        names = getattr(self._model, "label_names", None)
        self._label_names = None if names is None else [_text(n) for n in names.numpy()]
        logging.info(
            "Loaded the %s export %s (%s; instances: %s).",
            self.task,
            self.export_dir,
            self.precision,
            ", ".join(self.instance_keys),
        )

    def predict(self, instances):
        """The answers to `instances`, one dict each, in order (serving.predictor's table).

        Args:
            instances: a list of dicts with the `instance_keys` (string values).

        Returns:
            A list of dicts of plain Python values (str, float, int, lists).

        Raises:
            ValueError: an instance `serving.contract.check_instances` refuses.
        """
        if not instances:
            return []
        check_instances(instances, self._keys)
        inputs = {k: tf.constant([x[k] for x in instances], tf.string) for k in self.instance_keys}
        outputs = {k: v.numpy() for k, v in self.signature(**inputs).items()}
        return _ANSWERS[self.task](outputs, len(instances), self._label_names)
