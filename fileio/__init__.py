"""File plumbing every layer shares: atomic writes and input file patterns.

`modeling/`, `data/` and `training/` all write files that must never be seen half-written, and
read comma-separated glob patterns; they may not import each other, so this small package holds
the one implementation of each. It imports TensorFlow only for remote paths (gs://, ...), so the
TensorFlow-free tools (create_pretraining_data.py's workers) can use it.
"""
