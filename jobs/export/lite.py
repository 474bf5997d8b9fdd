"""export_model.py --format=tflite / --quantize=int8: a task's export as a TFLite model
(`serving.exports.tflite` converts and writes it)."""

import tensorflow as tf
from absl import logging

from fileio.atomic import atomic_directory
from serving.exports.tflite import lite_settings, write_tflite_export


def write_lite_export(run, bert_config, root):
    """Writes `root`'s model as the TFLite export `run.export_dir`, atomically.

    Args:
        run: the `jobs.export_run.ExportRun` (its task, quantization and the settings
            serving.json records).
        bert_config: the model's `BertConfig`.
        root: the text-in export built for the task (the encoder's root for --task=encoder),
            whose labels and null threshold serving.json records.
    """
    model = root.encoder if run.task == "encoder" else root.model
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
            lite_settings(run, root),
        )
    logging.info("Wrote %s", run.export_dir)
