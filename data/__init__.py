"""Data, by concern: tokenization, pretraining, glue, squad, ner, extraction, records.

Each subpackage turns one kind of input into model features and model outputs back into the
original's files; `records` holds the TFRecord writers and the tf.data input pipelines they share.
"""
