"""One way to ask any export for answers: instances (plain dicts) in, answers (plain dicts) out.

`load_predictor(export_dir)` reads whatever export_model.py wrote there:

* a TFLite export (`--format=tflite`, `--quantize=int8`: `model.tflite` beside
  `serving.json`) -> `serving.lite_predictor.LitePredictor`;
* a text-in SavedModel (float32 or bfloat16) -> `serving.saved_model_predictor
  .SavedModelPredictor`.

Both meet `serving.contract.Predictor` (task, precision, instance keys, `predict`) and answer
alike, so serve.py, the benchmarks and the tests treat every export the same (the instance keys
of each task: `serving.contract.INSTANCE_KEYS`):

| task | instance | answer |
|---|---|---|
| classifier | `{"text_a": str}` (+ `"text_b"` for pairs) | `{"label": str, "probabilities": [float]}` or, regression, `{"score": float}` |
| ner | `{"text": str}` | `{"words": [str], "tags": [str]}` |
| squad | `{"question": str, "context": str}` | `{"answer": str, "start_char": int, "end_char": int, "score": float}` (+ `"no_answer_probability"` for SQuAD 2.0) |
| encoder | `{"text": str}` (+ `"text_b"`) | `{"pooled_output": [float]}` |
"""

from serving.lite_files import is_tflite_export


def load_predictor(export_dir, num_threads=None):
    """The predictor of the export in `export_dir`.

    Args:
        export_dir: a folder export_model.py wrote.
        num_threads: CPU threads for the model (None: the runtime's default).

    Returns:
        A `serving.contract.Predictor`.

    Raises:
        UserError: export_dir is not an export, or its files are damaged.
    """
    if is_tflite_export(export_dir):
        from serving.lite_predictor import LitePredictor

        return LitePredictor(export_dir, num_threads=num_threads)
    from serving.saved_model_predictor import SavedModelPredictor

    return SavedModelPredictor(export_dir, num_threads=num_threads)
