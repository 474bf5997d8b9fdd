"""Fine-tuning record files are the same bytes on every run: a `tf.train.Example`'s feature map
is serialized in sorted key order, not in the process's hash order."""

import os
import subprocess
import sys

import tensorflow as tf

from tests.helpers.scripts import ENV, REPO

_WRITE = """
import sys
from data.records.example_files import int64_feature, write_examples
names = ["input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example"]
write_examples(sys.argv[1], [{n: int64_feature([i, len(n)]) for n in names} for i in range(3)])
"""


def test_same_bytes_whatever_the_hash_seed(tmp_path):
    paths = []
    for seed in ("1", "2", "3"):
        path = str(tmp_path / f"seed{seed}.tf_record")
        env = {**ENV, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _WRITE, path], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        paths.append(path)
    contents = [open(p, "rb").read() for p in paths]
    assert contents[0] == contents[1] == contents[2]
    # ... and they parse to the records written.
    (first, *_) = [
        tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(paths[0])
    ]
    assert sorted(first.features.feature) == sorted(
        ["input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example"]
    )
    assert list(first.features.feature["input_mask"].int64_list.value) == [0, 10]
    assert os.path.getsize(paths[0]) > 0
