"""The teacher's stored outputs (data/records/teacher_outputs.py): written as they stream in and
read back identical, and read zipped with the training records so that each shuffled example
keeps its own."""

import numpy as np
import tensorflow as tf

from data.records.example_files import int64_feature, write_examples
from data.records.input_pipeline import fine_tuning_dataset
from data.records.teacher_outputs import (
    BesideRecords,
    read_teacher_records,
    teacher_feature_spec,
    write_teacher_records,
)


def test_written_and_read_back_identical(tmp_path):
    rng = np.random.default_rng(0)
    shape = (6, 3)
    # Rows of batches cut to their longest sequence come shorter; they are stored padded.
    rows = [rng.normal(0, 3, (n, 3)).astype(np.float32) for n in (6, 4, 6, 2, 5)]
    gold = [1, 1, 0, 1, 0]
    path = str(tmp_path / "teacher_outputs.tf_record")
    assert write_teacher_records(path, iter(rows), gold, shape) == 5
    logits, read_gold = read_teacher_records(path, shape)
    assert logits.dtype == np.float32 and logits.shape == (5, 6, 3)
    for row, stored in zip(rows, logits, strict=True):
        np.testing.assert_array_equal(stored[: len(row)], row)
        np.testing.assert_array_equal(stored[len(row) :], 0.0)
    assert read_gold.tolist() == gold


def test_shuffled_training_records_keep_their_teacher_outputs(tmp_path):
    n, length = 37, 4
    train = str(tmp_path / "train.tf_record")
    write_examples(
        train,
        (
            {
                "input_ids": int64_feature([i + 1] * length),
                "input_mask": int64_feature([1] * length),
            }
            for i in range(n)
        ),
    )
    teacher = str(tmp_path / "teacher_outputs.tf_record")
    write_teacher_records(
        teacher,
        (np.array([i + 1, -i], np.float32) for i in range(n)),
        [i % 2 for i in range(n)],
        (2,),
    )
    spec = {
        "input_ids": tf.io.FixedLenFeature([length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([length], tf.int64),
    }
    ds = fine_tuning_dataset(
        train, spec, 8, True, seed=3, beside=BesideRecords(teacher, teacher_feature_spec((2,)))
    )
    seen = []
    for batch in ds.take(10):
        ids = batch["input_ids"].numpy()[:, 0]
        np.testing.assert_array_equal(batch["teacher_logits"].numpy()[:, 0], ids)
        np.testing.assert_array_equal(batch["gold"].numpy(), (ids - 1) % 2)
        seen.extend(ids.tolist())
    assert seen[:8] != sorted(seen[:8])  # shuffled
