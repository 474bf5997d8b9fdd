"""Named-entity recognition data (CoNLL files, word-level features and scoring)."""
