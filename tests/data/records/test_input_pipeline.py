"""The input pipelines' split of global batches over pipelines and replicas (Batching): the
replicas of a step together hold exactly the global batch of one device, in order; padding to
whole batches marks the filling; file sharding gives each pipeline its own files."""

import dataclasses

import numpy as np
import pytest

from data.glue.features import ClassifierFeatures
from data.glue.records import classifier_dataset, write_classifier_tfrecord
from data.records.input_pipeline import (
    Batching,
    check_record_lengths,
    pretraining_dataset,
    pretraining_feature_spec,
)
from tests.helpers.pretraining_records import write_records


def _ids(batch):
    # Whole rows: the records of the test data differ from each other.
    return [tuple(row) for row in batch["input_ids"].numpy().tolist()]


def _steps(dataset_fn, pipelines, replicas, steps, batch_size=12):
    """Per step, the concatenation of every replica's batch in (pipeline, replica) order."""
    streams = [
        iter(dataset_fn(Batching(num_pipelines=pipelines, pipeline_index=i, replicas=replicas)))
        for i in range(pipelines)
    ]
    out = []
    for _ in range(steps):
        rows = []
        for stream in streams:
            for _ in range(replicas):
                batch = next(stream)
                assert batch["input_ids"].shape[0] == batch_size // (pipelines * replicas)
                rows += _ids(batch)
        out.append(rows)
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = tmp_path_factory.mktemp("records")
    paths = [str(out / f"part-{i}.tfrecord") for i in range(4)]
    for i, path in enumerate(paths):
        write_records(path, num_examples=40, seed=i)
    return paths


@pytest.mark.parametrize("pipelines,replicas", [(2, 1), (1, 2), (2, 2), (3, 2)])
def test_record_sharding_rebuilds_the_global_batches(files, pipelines, replicas):
    def dataset_fn(batching, skip=0):
        return pretraining_dataset(
            files[:1], 32, 5, 12, True, seed=3, skip_batches=skip, batching=batching
        )

    one = [_ids(b) for b in dataset_fn(Batching()).take(5)]
    assert len({row for step in one for row in step}) > 30  # of the file's 40 records
    assert _steps(dataset_fn, pipelines, replicas, 5) == one
    # Resuming at step 2 gives every pipeline its place in the same stream.
    resumed = _steps(lambda b: dataset_fn(b, skip=2), pipelines, replicas, 3)
    assert resumed == one[2:]


def test_fine_tuning_split_and_evaluation_padding(tmp_path):
    features = [ClassifierFeatures([i, i, i], [1] * 3, [0] * 3, i % 3, i != 4) for i in range(10)]
    path = str(tmp_path / "data.tf_record")
    write_classifier_tfrecord(features, path)

    def dataset_fn(batching, training):
        return classifier_dataset(path, 3, False, 12, training, seed=5, batching=batching)

    one = [_ids(b) for b in dataset_fn(Batching(), True).take(4)]
    assert _steps(lambda b: dataset_fn(b, True), 2, 2, 4) == one

    # Evaluation: 10 examples, global batch 4 over 2 pipelines -> 3 steps of whole batches.
    def eval_fn(batching):
        return classifier_dataset(path, 3, False, 4, False, batching=batching)

    rows, real = [], []
    streams = [
        list(eval_fn(Batching(num_pipelines=2, pipeline_index=i, pad_to_whole_batches=True)))
        for i in range(2)
    ]
    assert [len(s) for s in streams] == [3, 3]
    for step in zip(*streams, strict=True):
        for batch in step:
            assert batch["input_ids"].shape == (2, 3)
            rows += [r[0] for r in _ids(batch)]
            real += batch["is_real_example"].numpy().tolist()
    # The filling copies the last batch's first record (8) and counts for nothing; the data's
    # own is_real_example (0 for example 4) is kept.
    assert rows == list(range(10)) + [8, 8]
    assert real == [1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0]
    # One pipeline, padded: the same rows and marks in global batches.
    padded = list(eval_fn(Batching(pad_to_whole_batches=True)))
    assert [b["input_ids"].shape[0] for b in padded] == [4, 4, 4]
    assert np.concatenate([b["is_real_example"] for b in padded]).tolist() == real


def test_file_sharding_reads_only_own_files(files):
    per_file = []
    for path in files:
        batch = next(iter(pretraining_dataset([path], 32, 5, 40, False)))
        per_file.append(set(_ids(batch)))

    for index in range(2):
        batching = Batching(num_pipelines=2, pipeline_index=index, replicas=2)
        dataset = pretraining_dataset(files, 32, 5, 12, True, seed=3, batching=batching)
        seen = set()
        for batch in dataset.take(20):
            assert batch["input_ids"].shape[0] == 3  # 12 / (2 pipelines * 2 replicas)
            seen |= set(_ids(batch))
        own = per_file[index] | per_file[index + 2]
        assert seen <= own and len(seen) > 40


def test_batch_size_must_split_over_replicas(files):
    with pytest.raises(ValueError, match="not divisible by the number of replicas \\(4\\)"):
        pretraining_dataset(files[:1], 32, 5, 10, True, batching=Batching(2, 0, 2))


def test_group_by_length_keeps_each_window_and_resumes(tmp_path):
    """Grouping: every window of 5 batches holds exactly the stream's examples of that window,
    each batch a run of similar lengths, the windows' batch orders differ, the split over
    replicas still rebuilds the global batches, and a resume anywhere inside a window
    continues the same batches."""
    rng = np.random.default_rng(0)
    features = []
    for i in range(97):
        length = int(rng.integers(2, 33))
        ids = [1000 + i] + [7] * (length - 1) + [0] * (32 - length)
        mask = [1] * length + [0] * (32 - length)
        features.append(ClassifierFeatures(ids, mask, [0] * 32, i % 2, True))
    path = str(tmp_path / "train.tf_record")
    write_classifier_tfrecord(features, path)
    group = Batching(group_batches=5, group_seed=4)

    def dataset_fn(batching, skip=0):
        return classifier_dataset(path, 32, False, 8, True, 3, skip, batching)

    def examples(batch):
        return [row[0] for row in batch["input_ids"].numpy().tolist()]

    def lengths(batch):
        return batch["input_mask"].numpy().sum(1).tolist()

    plain = list(dataset_fn(Batching()).take(20))
    grouped = list(dataset_fn(group).take(20))
    spans = []
    for w in range(4):
        window = range(5 * w, 5 * w + 5)
        assert sorted(x for b in window for x in examples(grouped[b])) == sorted(
            x for b in window for x in examples(plain[b])
        )
        ordered = sorted(n for b in window for n in lengths(grouped[b]))
        # Each batch is a run of 8 consecutive lengths of the window's sorted order.
        runs = sorted(sorted(lengths(grouped[b])) for b in window)
        assert [n for run in runs for n in run] == ordered
        spans.append([min(lengths(grouped[b])) for b in window])
    assert len({tuple(np.argsort(s)) for s in spans}) > 1  # batch order drawn per window
    padding = [sum(32 - n for n in lengths(b)) for b in grouped]
    cut = [max(lengths(b)) * 8 - sum(lengths(b)) for b in grouped]
    assert sum(cut) < 0.5 * sum(max(lengths(b)) * 8 - sum(lengths(b)) for b in plain)
    assert sum(cut) < sum(padding)
    for skip in (3, 5, 12):
        resumed = list(dataset_fn(group, skip).take(4))
        assert [examples(b) for b in resumed] == [examples(b) for b in grouped[skip : skip + 4]]
    with_group = {"group_batches": 5, "group_seed": 4}
    split = _steps(lambda b: dataset_fn(dataclasses.replace(b, **with_group)), 2, 2, 6, 8)
    assert split == [_ids(b) for b in grouped[:6]]
    with pytest.raises(ValueError, match="for training input only"):
        classifier_dataset(path, 32, False, 8, False, batching=group)


@pytest.mark.parametrize("fine,step", [(False, 16), (True, 8)])
def test_batches_cut_to_their_bucket(tmp_path, fine, step):
    """Each batch runs at its longest sequence rounded up to the bucket step: 16 at
    max_seq_length 128 (at most 8 buckets, for steps compiled per shape), else 8."""
    rng = np.random.default_rng(1)
    features = []
    for i in range(64):
        length = int(rng.integers(2, 129))
        ids = [5 + i] * length + [0] * (128 - length)
        features.append(ClassifierFeatures(ids, [1] * length + [0] * (128 - length), [0] * 128, 0))
    path = str(tmp_path / "cut.tf_record")
    write_classifier_tfrecord(features, path)
    batching = Batching(cut_to_length=True, fine_buckets=fine)
    for batch in classifier_dataset(path, 128, False, 4, False, batching=batching):
        longest = int(batch["input_mask"].numpy().sum(1).max())
        assert batch["input_ids"].shape[1] == min(128, -(-longest // step) * step)


def test_record_check_passes_over_empty_files_and_refuses_when_all_are(tmp_path):
    spec = pretraining_feature_spec(32, 5)
    empty, other = tmp_path / "empty.tfrecord", tmp_path / "other.tfrecord"
    empty.write_bytes(b"")
    other.write_bytes(b"")
    full = tmp_path / "full.tfrecord"
    write_records(full, num_examples=2)
    check_record_lengths([str(empty), str(full)], spec)
    with pytest.raises(ValueError, match="feature 'input_ids' has length 32 but the flags expect"):
        check_record_lengths([str(empty), str(full)], pretraining_feature_spec(64, 5))
    with pytest.raises(ValueError, match=r"None of the 2 --input_file files holds a record"):
        check_record_lengths([str(empty), str(other)], spec)
