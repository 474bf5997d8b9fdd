"""WordPiece tokenization: the exact `FullTokenizer`, its in-graph twin, packing, vocabularies."""
