"""SQuAD 1.1 / 2.0: examples, doc-stride features, records and the prediction files."""
