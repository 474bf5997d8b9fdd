"""extract_features.py's input lines and JSON-lines output, in the original's formats."""
