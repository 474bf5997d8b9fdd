"""Answers from a TFLite export (serving.exports.tflite): the project's tokenizer and answer code
around the TFLite interpreter.

The interpreter is LiteRT's (`ai_edge_litert`) where it is installed, else TensorFlow's own
`tf.lite.Interpreter`: the same kernels and XNNPACK. With LiteRT, nothing here loads
TensorFlow. Each `predict` call is one model call: every window of its instances at once,
cut to the longest (the interpreter is resized to each call's shape), so short requests cost
what their length costs; the caller sizes the calls (serve.py's `--max_batch_size` instances,
`serving.batcher`), as for the SavedModels.
"""

import hashlib
import json
import os
import warnings

import numpy as np

from data.tokenization.full_tokenizer import FullTokenizer
from fileio.errors import UserError, first_line
from serving.contract import MODEL_INPUTS, check_instances
from serving.lite_files import SERVING_CONFIG, TFLITE_MODEL
from serving.lite_io import LITE_IO
from serving.native_logs import held_back_notices

# Outputs with one row per position (cut to each window's length); the others have one per
# window. NER's `logits` are per position too ([B, T, L]).
_PER_POSITION = ("start_logits", "end_logits", "sequence_output")


def _interpreter_class():
    try:
        from ai_edge_litert.interpreter import Interpreter

        return Interpreter
    except ImportError:
        import tensorflow as tf

        with warnings.catch_warnings():
            # TensorFlow points to ai_edge_litert; its own interpreter still runs the file.
            warnings.simplefilter("ignore")
            return tf.lite.Interpreter


def _read_config(export_dir):
    path = os.path.join(export_dir, SERVING_CONFIG)
    try:
        with open(path) as f:
            config = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(
            f"{path} cannot be read ({err}): export the model again with export_model.py "
            "--format=tflite (or --quantize=int8)."
        ) from None
    if config.get("task") not in LITE_IO:
        raise UserError(
            f"{path} names no task this version serves ({config.get('task')!r}): export the "
            "model again with this version's export_model.py."
        )
    return config


def _check_sha256(path, expected):
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as err:
        raise UserError(
            f"{path} cannot be read ({err.strerror}): export the model again with "
            "export_model.py --format=tflite."
        ) from None
    if expected and digest.hexdigest() != expected:
        raise UserError(
            f"{path} is damaged (its SHA-256 is not the one serving.json recorded at export): "
            "copy the export again or export the model again."
        )


class LitePredictor:
    """A TFLite export of export_model.py, answering plain dicts: a `serving.contract.Predictor`.

    Args:
        export_dir: the export's folder (model.tflite, serving.json, vocab.txt).
        num_threads: interpreter threads (None: the runtime's default).
        pad_to_max_seq_length: run every window at `max_seq_length`, as the original and the
            text-in SavedModels do, instead of at its call's longest. Only SQuAD's answers can
            change: the original picks the `n_best_size` best start and end positions among
            padding positions too, so padding can crowd out a valid span.

    Attributes:
        task: "classifier", "ner", "squad" or "encoder" (serving.json's).
        precision: "int8" or "float32".
        instance_keys, optional_instance_keys: the keys of its instances
            (`serving.contract.INSTANCE_KEYS`).
        io: the task's input and answer code (`serving.lite_io.LITE_IO`).

    Raises:
        UserError: a missing or damaged file of the export.
    """

    def __init__(self, export_dir, num_threads=None, pad_to_max_seq_length=False):
        self.export_dir = export_dir
        self.config = _read_config(export_dir)
        self.task = self.config["task"]
        self.precision = "int8" if self.config.get("quantize") == "int8" else "float32"
        self.pad_to_max_seq_length = pad_to_max_seq_length
        vocab = os.path.join(export_dir, "vocab.txt")
        self.tokenizer = FullTokenizer(vocab, do_lower_case=self.config["do_lower_case"])
        self.io = LITE_IO[self.task](self.config, self.tokenizer)
        self.instance_keys = self.io.keys.required
        self.optional_instance_keys = self.io.keys.optional
        path = os.path.join(export_dir, TFLITE_MODEL)
        _check_sha256(path, self.config.get("model_sha256"))
        try:
            with held_back_notices():
                interpreter = _interpreter_class()(model_path=path, num_threads=num_threads)
                # The runtime applies XNNPACK, and announces it on stderr, at the first
                # allocation: here, where the notice can be held back, not at the first request.
                interpreter.allocate_tensors()
            self._runner = interpreter.get_signature_runner("serving_default")
        except (ValueError, RuntimeError) as err:
            raise UserError(
                f"{path} is not a TFLite model this runtime can load ({first_line(err)}):"
                " export the model again with export_model.py --format=tflite."
            ) from None

    def run(self, windows):
        """The network's outputs for each window, in one call, trimmed to its length.

        Args:
            windows: list of {"input_ids", "input_mask", "segment_ids"} int lists (a
                `serving.lite_io.Windows`' `ids`).

        Returns:
            list of dicts name -> np.ndarray (per-position outputs cut to the window's length).
        """
        if not windows:
            return []
        longest = max(len(w["input_ids"]) for w in windows)
        if self.pad_to_max_seq_length:
            longest = max(longest, self.config["max_seq_length"])
        feeds = {}
        for name in MODEL_INPUTS:
            array = np.zeros([len(windows), longest], np.int32)
            for row, window in zip(array, windows, strict=True):
                row[: len(window[name])] = window[name]
            feeds[name] = array
        result = self._runner(**feeds)
        outputs = []
        for i, window in enumerate(windows):
            length = longest if self.pad_to_max_seq_length else len(window["input_ids"])
            outputs.append(
                {
                    k: v[i, :length] if k in _PER_POSITION or v.ndim == 3 else v[i]
                    for k, v in result.items()
                }
            )
        return outputs

    def predict(self, instances):
        """Answers, one per instance (see serving.predictor's table).

        Raises:
            ValueError: an instance `serving.contract.check_instances` refuses.
        """
        if not instances:
            return []
        check_instances(instances, self.io.keys)
        windows = self.io.windows(instances)
        return self.io.answers(windows, self.run(windows.ids))
