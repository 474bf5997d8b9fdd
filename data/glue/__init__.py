"""Sentence (pair) classification: GLUE/XNLI readers, features, records, metrics, submissions."""
