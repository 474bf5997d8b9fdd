"""export_model.py's exports, one job module each (`jobs.export_run` chooses which).

* `classifier.py`, `ner.py`, `squad.py`, `pretraining.py`: each task's model and weights in
  the SavedModel `serving/exports/` defines for it. Each gives one builder, `(run, bert_config,
  weights) -> (root, signatures)`: `run` the `jobs.export_run.ExportRun`, `bert_config` the
  checkpoint's `BertConfig`, `weights` its `weights.Weights`, strictly loaded into the model
  of `root`, the object the SavedModel saves with `signatures`. The builder stands on
  `<task>_model` (the Keras model, loaded, and what its answers need: head, tags, null
  threshold), which the TFLite export uses alone.
* `tfhub.py`: the TF Hub encoder and its preprocessor, also convert_checkpoint.py's
  `--output_format=tfhub`.
* `lite.py`: `--format=tflite` / `--quantize=int8`, the TFLite model of a task.
* `weights.py` (the weights an export reads, their strict load, the vocabulary they fit) and
  `saved_model.py` (the export's folder: refused if it exists, written atomically), which
  they share.
"""
