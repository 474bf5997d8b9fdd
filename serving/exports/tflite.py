"""The TFLite export (`export_model.py --format=tflite`, `--quantize=int8`): ids in, logits out.

TFLite runs no tf-text op, so the model file holds the network only: `serving_default` takes
`input_ids`, `input_mask` and `segment_ids` (int32 `[B, T]`, any batch and length: the
runtime resizes to each request batch, so nothing is padded to `max_seq_length`) and returns
the task head's raw outputs:

* classifier: `logits` float32 `[B, C]` (`[B, 1]` for regression);
* ner: `logits` `[B, T, L]`; squad: `start_logits`, `end_logits` `[B, T]`;
* encoder: `pooled_output` `[B, H]`, `sequence_output` `[B, T, H]`.

Beside it: `vocab.txt`, `tokenizer.json` (the same WordPiece for the `tokenizers` library,
ids identical to `FullTokenizer`), `bert_config.json` and `serving.json` (the task and every
setting the answers need: labels, windows, SQuAD's limits and null threshold), which
`serving.lite_predictor.LitePredictor` and serve.py read.

`--quantize=int8` is TFLite's dynamic-range quantization: the word embeddings (one scale for
the table) and every kernel of at least 1024 values (attention and feed-forward, large heads;
one scale per output column) are stored in int8, and the kernels multiply in int8 against
activations quantized on the fly; biases, LayerNorm, softmax, GELU, the position and
token-type embeddings and small output layers (e.g. a 2-class head) stay float32. The file is
~4x smaller than float32.
"""

import hashlib
import json
import os
import shutil
import tempfile

import tensorflow as tf
from absl import logging

from serving.contract import MODEL_INPUTS
from serving.exports.tokenizer_json import write_tokenizer_json
from serving.lite_files import SERVING_CONFIG, TFLITE_MODEL
from serving.native_logs import held_back_notices

QUANTIZATIONS = ("none", "int8")


def _outputs(task, model, inputs):
    """The head's raw outputs by name (see the module docstring)."""
    if task == "encoder":
        out = model(inputs, training=False)
        return {"pooled_output": out["pooled_output"], "sequence_output": out["sequence_output"]}
    outputs = model(inputs, training=False)
    if task == "squad":
        start_logits, end_logits = outputs
        return {"start_logits": start_logits, "end_logits": end_logits}
    return {"logits": outputs}


def _frozen_signature(task, model):
    """`serving_default` with the weights folded in as constants."""
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    spec = [tf.TensorSpec([None, None], tf.int32, name=name) for name in MODEL_INPUTS]

    @tf.function(input_signature=spec)
    def serve(input_ids, input_mask, segment_ids):
        inputs = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        return _outputs(task, model, inputs)

    concrete = serve.get_concrete_function()
    names = sorted(concrete.structured_outputs)
    # Folded weights: converting a function that reads Keras 3 variables leaves their
    # values out of the file.
    frozen = convert_variables_to_constants_v2(concrete)

    @tf.function(input_signature=spec)
    def named(input_ids, input_mask, segment_ids):
        flat = frozen(input_ids, input_mask, segment_ids)
        return dict(zip(names, tf.nest.flatten(flat), strict=True))

    return named.get_concrete_function()


def convert(task, model, quantize="none"):
    """The TFLite flatbuffer of `model`'s head outputs.

    Args:
        task: "classifier", "ner", "squad" or "encoder".
        model: the Keras model with its weights loaded (`BertClassifier`, ...; the encoder:
            `BertModel`).
        quantize: "none" (float32) or "int8" (dynamic range).

    Returns:
        bytes.
    """
    # The freezing and the converter log through absl's C++ logging, which
    # TF_CPP_MIN_LOG_LEVEL does not reach.
    with held_back_notices():
        signature = _frozen_signature(task, model)
        temp = tempfile.mkdtemp(prefix="tflite-export-")
        try:
            tf.saved_model.save(tf.Module(), temp, signatures={"serving_default": signature})
            converter = tf.lite.TFLiteConverter.from_saved_model(temp)
            if quantize == "int8":
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
            return converter.convert()
        finally:
            shutil.rmtree(temp, ignore_errors=True)


def write_tflite_export(
    temp_dir, task, model, quantize, vocab_file, do_lower_case, bert_config, settings
):
    """Writes the export's files into `temp_dir` (the caller renames it into place).

    Args:
        temp_dir: an empty folder.
        task, model, quantize: as for `convert`.
        vocab_file: the model's vocab.txt (copied).
        do_lower_case: the tokenizer's casing.
        bert_config: the model's `BertConfig` (written as bert_config.json).
        settings: dict of what the answers need (labels, max_seq_length, doc_stride, ...),
            stored in serving.json with the task, casing and quantization.
    """
    flatbuffer = convert(task, model, quantize)
    with open(os.path.join(temp_dir, TFLITE_MODEL), "wb") as f:
        f.write(flatbuffer)
    shutil.copyfile(vocab_file, os.path.join(temp_dir, "vocab.txt"))
    write_tokenizer_json(os.path.join(temp_dir, "tokenizer.json"), vocab_file, do_lower_case)
    bert_config.to_json_file(os.path.join(temp_dir, "bert_config.json"))
    config = {
        "format": "tflite",
        "task": task,
        "quantize": quantize,
        # Checked at load: a damaged weight passes TFLite's own structural check.
        "model_sha256": hashlib.sha256(flatbuffer).hexdigest(),
        "do_lower_case": bool(do_lower_case),
        "inputs": list(MODEL_INPUTS),
        **settings,
    }
    with open(os.path.join(temp_dir, SERVING_CONFIG), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    logging.info(
        "TFLite %s model: %.1f MB (%s)",
        task,
        len(flatbuffer) / 1e6,
        "int8 dynamic range" if quantize == "int8" else "float32",
    )


def lite_settings(run, head=None, labels=None, null_threshold=None):
    """What serving.json records for the answers (see serving.lite_io).

    Args:
        run: export_model.py's settings (`jobs.export_run.ExportRun`).
        head: --task=classifier: what the head predicts (`data.classification.head`).
        labels: --task=ner: the tags, in the head's order.
        null_threshold: --task=squad: the SQuAD 2.0 null threshold.
    """
    settings = {"max_seq_length": run.max_seq_length}
    if run.task == "classifier":
        settings.update(
            task_name=run.task_name,
            labels=list(head.labels),
            is_regression=head.problem_type == "regression",
            multi_label=head.problem_type == "multi_label",
            thresholds=head.thresholds,
            has_text_b=bool(head.has_text_b),
            long_inputs=run.long_inputs,
            head_tokens=run.head_tokens,
            doc_stride=run.doc_stride,
            window_aggregation=run.window_aggregation,
        )
    elif run.task == "ner":
        settings.update(labels=list(labels), doc_stride=run.doc_stride)
    elif run.task == "squad":
        settings.update(
            doc_stride=run.doc_stride,
            max_query_length=run.max_query_length,
            n_best_size=run.n_best_size,
            max_answer_length=run.max_answer_length,
            version_2_with_negative=run.version_2_with_negative,
            null_score_diff_threshold=float(null_threshold),
        )
    return settings
