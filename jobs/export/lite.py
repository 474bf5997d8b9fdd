"""export_model.py --format=tflite / --quantize=int8: a task's export as a TFLite model
(`serving.exports.tflite` converts and writes it).

The task's Keras model and what its answers need (labels, head, null threshold) come from the
same builders as the text-in exports (`classifier_model`, ...), without the text-in export.
"""

import tensorflow as tf
from absl import logging

from fileio.atomic import atomic_directory
from jobs.export.classifier import classifier_model
from jobs.export.ner import ner_model
from jobs.export.squad import squad_model
from jobs.export.tfhub import encoder_model
from serving.exports.tflite import lite_settings, write_tflite_export


def _task_model(run, bert_config, weights):
    """The task's Keras model, weights loaded, and `lite_settings`' keywords for its answers."""
    if run.task == "classifier":
        model, head = classifier_model(run, bert_config, weights)
        return model, {"head": head}
    if run.task == "ner":
        model, labels = ner_model(run, bert_config, weights)
        return model, {"labels": labels}
    if run.task == "squad":
        model, threshold = squad_model(run, bert_config, weights)
        return model, {"null_threshold": threshold}
    model, _ = encoder_model(bert_config, weights)
    return model, {}


def write_lite_export(run, bert_config, weights):
    """Writes the task's model as the TFLite export `run.export_dir`, atomically.

    Args:
        run: the `jobs.export_run.ExportRun` (its task, quantization and the settings
            serving.json records).
        bert_config: the model's `BertConfig`.
        weights: the checkpoint's `jobs.export.weights.Weights`.

    Raises:
        ValueError: as the task's builder (no labels, no null threshold, another model).
    """
    model, answers = _task_model(run, bert_config, weights)
    with atomic_directory(run.export_dir, overwrite=run.overwrite) as temp:
        tf.io.gfile.makedirs(temp)
        write_tflite_export(
            temp,
            run.task,
            model,
            run.quantize,
            run.vocab_file,
            run.do_lower_case,
            bert_config,
            lite_settings(run, **answers),
        )
    logging.info("Wrote %s", run.export_dir)
