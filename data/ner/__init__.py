"""Named-entity recognition: CoNLL files, label sets, windows, records, conlleval scoring and
prediction files."""
