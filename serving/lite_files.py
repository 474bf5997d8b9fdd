"""The files that make a TFLite export (serving.exports.tflite writes them, serving.lite_predictor
reads them)."""

import os

TFLITE_MODEL = "model.tflite"
SERVING_CONFIG = "serving.json"


def is_tflite_export(export_dir):
    """True if export_dir holds a TFLite export (model.tflite and serving.json)."""
    return os.path.isfile(os.path.join(export_dir, TFLITE_MODEL)) and os.path.isfile(
        os.path.join(export_dir, SERVING_CONFIG)
    )
