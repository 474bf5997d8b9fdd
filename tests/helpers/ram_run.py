"""Runs one runner in this process with its files on TensorFlow's in-memory file system.

`ram://` exists only inside the process that registered it, so the inputs are copied there,
the runner's `main` runs here with the command line given, and what it wrote is copied back to
local disk for the test to read. The runner sees only `ram://` paths, as it would see `gs://`.

    python -m tests.helpers.ram_run SPEC.json

SPEC.json: {"runner": "run_classifier.py", "argv": [...], "copy_in": {local: url},
"copy_out": {url: local}}; directories are copied recursively.
"""

import json
import os
import runpy
import sys

from absl import app
from tensorflow.io import gfile

from tests.helpers.paths import REPO


def _files_under(top, depth=4):
    """Every file below `top`, down to `depth` levels. Globbed level by level: the in-memory
    file system's listing is by name prefix and leaves out some directories (`walk` and
    `listdir` of "out" can miss "out/eval/" and list "out/eval_results.txt" under it)."""
    found = []
    for level in range(1, depth + 1):
        for path in gfile.glob(top.rstrip("/") + "/*" * level):
            if gfile.exists(path) and not gfile.isdir(path):
                found.append(path)
    return sorted(set(found))


def copy_tree(source, target):
    """Copies a file, or a directory recursively, between any two TensorFlow file systems."""
    files = _files_under(source) if gfile.isdir(source) else [source]
    for path in files:
        destination = target + path[len(source) :]
        gfile.makedirs(os.path.dirname(destination))
        gfile.copy(path, destination, overwrite=True)


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    for local, url in spec["copy_in"].items():
        copy_tree(local, url)
    runner = os.path.join(REPO, spec["runner"])
    # Not "__main__": the runner defines its flags and main, run here under app.run.
    module = runpy.run_path(runner, run_name="ram_run")
    try:
        app.run(module["main"], argv=[runner, *spec["argv"]])
    except SystemExit as done:
        if done.code not in (None, 0):
            raise
    finally:
        for url, local in spec["copy_out"].items():
            # A directory of the in-memory file system need not "exist" to hold files.
            if gfile.exists(url) or gfile.glob(url + "/*"):
                copy_tree(url, local)


if __name__ == "__main__":
    main()
