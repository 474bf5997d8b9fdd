"""Answers from a TFLite export (serving.exports.tflite): the project's tokenizer and answer code
around the TFLite interpreter.

The interpreter is LiteRT's (`ai_edge_litert`) where it is installed, else TensorFlow's own
`tf.lite.Interpreter`: the same kernels and XNNPACK. Windows run in batches of up to
`max_batch_size`, each cut to its longest window (the interpreter is resized to each batch's
shape), so short requests cost what their length costs.
"""

import hashlib
import json
import os
import warnings

import numpy as np

from data.tokenization.full_tokenizer import FullTokenizer
from fileio.errors import UserError, first_line
from serving.lite_files import SERVING_CONFIG, TFLITE_MODEL
from serving.lite_tasks import TASKS
from serving.native_logs import held_back_notices

_ID_NAMES = ("input_ids", "input_mask", "segment_ids")
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
    if config.get("task") not in TASKS:
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
    """serving.predictor's `predict` over a TFLite export.

    Args:
        export_dir: the export's folder (model.tflite, serving.json, vocab.txt).
        num_threads: interpreter threads (None: the runtime's default).
        max_batch_size: windows run at once.
        pad_to_max_seq_length: run every window at `max_seq_length`, as the original and the
            text-in SavedModels do, instead of at its batch's longest. Only SQuAD's answers can
            change: the original picks the `n_best_size` best start and end positions among
            padding positions too, so padding can crowd out a valid span.

    Raises:
        UserError: a missing or damaged file of the export.
    """

    def __init__(
        self, export_dir, num_threads=None, max_batch_size=32, pad_to_max_seq_length=False
    ):
        self.export_dir = export_dir
        self.config = _read_config(export_dir)
        self.task = self.config["task"]
        self.precision = "int8" if self.config.get("quantize") == "int8" else "float32"
        self.max_batch_size = max_batch_size
        self.pad_to_max_seq_length = pad_to_max_seq_length
        vocab = os.path.join(export_dir, "vocab.txt")
        self.tokenizer = FullTokenizer(vocab, do_lower_case=self.config["do_lower_case"])
        self.answers = TASKS[self.task](self.config, self.tokenizer)
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

    @property
    def instance_keys(self):
        """The keys every instance needs, e.g. ("text_a", "text_b")."""
        return self.answers.keys

    @property
    def optional_instance_keys(self):
        """Keys an instance may add (the encoder's "text_b")."""
        return getattr(self.answers, "optional_keys", ())

    def run(self, windows):
        """The network's outputs for each window, trimmed to its length.

        Args:
            windows: list of {"input_ids", "input_mask", "segment_ids"} int lists.

        Returns:
            list of dicts name -> np.ndarray (per-position outputs cut to the window's length).
        """
        outputs = []
        for begin in range(0, len(windows), self.max_batch_size):
            batch = windows[begin : begin + self.max_batch_size]
            longest = max(len(w["input_ids"]) for w in batch)
            if self.pad_to_max_seq_length:
                longest = max(longest, self.config["max_seq_length"])
            feeds = {}
            for name in _ID_NAMES:
                array = np.zeros([len(batch), longest], np.int32)
                for row, window in zip(array, batch, strict=True):
                    row[: len(window[name])] = window[name]
                feeds[name] = array
            result = self._runner(**feeds)
            for i, window in enumerate(batch):
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
            ValueError: an instance without the task's keys.
        """
        if not instances:
            return []
        windows, state = self.answers.windows(instances)
        return self.answers.answers(instances, state, self.run(windows))
