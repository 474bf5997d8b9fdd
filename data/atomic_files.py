"""Output files that are either untouched or complete: written under a temporary name first."""

import os


def write_atomically(path, data):
    """Writes `data` (str as UTF-8, or bytes) to `path` through a temporary file and a rename.

    Args:
        path: a local path, or a URL of a file system TensorFlow knows (e.g. gs://).
        data: the whole content.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    temp_path = f"{path}.tmp-{os.getpid()}"
    if "://" in path:
        import tensorflow as tf  # remote file systems such as gs://

        with tf.io.gfile.GFile(temp_path, "wb") as f:
            f.write(data)
        tf.io.gfile.rename(temp_path, path, overwrite=True)
        return
    try:
        with open(temp_path, "wb") as f:
            f.write(data)
        os.replace(temp_path, path)
    finally:
        if os.path.exists(temp_path):
            os.remove(temp_path)
