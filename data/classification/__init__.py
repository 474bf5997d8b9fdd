"""Scores and decisions for any classifier run, in numpy (TensorFlow-free).

* `multilabel_metrics`: micro / macro / per-label precision, recall and F1 and subset accuracy of
  an example x label {0,1} matrix.
* `thresholds`: the multi-label decision thresholds chosen on dev (one global, or one per label
  with a guard for labels with few dev positives) and `thresholds.txt`.
* `report`: per-class rows for `eval_report.tsv`, the confusion matrix as TSV and PNG.
* `class_weights`: balanced class weights (single-label), balanced positive weights
  (multi-label) and the `--class_weights` flag's value.
* `eval_results`: the `eval_results.txt` entries of a task of the user's own, by problem type.
* `predictions`: `test_predictions.tsv`, the predictions with their labels named.
"""
