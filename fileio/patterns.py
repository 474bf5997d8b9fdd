"""The runners' `--input_file`: comma-separated file names or glob patterns."""

import glob
import os


def _glob(pattern):
    if "://" in pattern:
        import tensorflow as tf  # remote file systems only; local reading stays TF-free

        try:
            return tf.io.gfile.glob(pattern), tf.io.gfile.isdir
        except tf.errors.NotFoundError:
            return [], tf.io.gfile.isdir
    # Python's glob lists a directory in the order TensorFlow's local glob does (the file
    # system's), so both modes below keep their meaning without importing TensorFlow.
    return glob.glob(pattern), os.path.isdir


def expand_file_patterns(patterns, flag="--input_file", as_original=False):
    """Expands comma-separated file names or glob patterns into the files they name.

    Args:
        patterns: e.g. "corpus/part-*.txt,extra.txt"; blanks around commas are ignored.
        flag: the flag the patterns came from, for error messages.
        as_original: expand as the original's `tf.gfile.Glob` loop did: each pattern's matches
            in the file system's listing order, a file matched twice listed twice. Only
            create_pretraining_data.py needs this, to read files in the original's order. By
            default each pattern's matches are sorted and repeats dropped, so a run reads the
            same files in the same order on every machine.

    Returns:
        The list of file paths, pattern by pattern.

    Raises:
        ValueError: if no pattern is given, or a pattern matches nothing or a directory.
    """
    pieces = [p.strip() for p in patterns.split(",") if p.strip()] if patterns else []
    if not pieces:
        raise ValueError(f"{flag} is empty; pass one or more comma-separated files or globs.")
    files, seen = [], set()
    for pattern in pieces:
        matches, is_dir = _glob(pattern)
        if not matches:
            raise ValueError(
                f"{flag}: no file matches {pattern!r}. Check the path; separate several files "
                "or patterns with commas."
            )
        for path in matches if as_original else sorted(matches):
            if is_dir(path):
                raise ValueError(
                    f"{flag}: {path!r} is a directory; pass a glob for the files in it, e.g. "
                    f"'{path.rstrip('/')}/*.txt'."
                )
            if as_original or path not in seen:
                files.append(path)
                seen.add(path)
    return files
