"""Batches cut to their longest sequence (length buckets) against full-length batches: the same
training (losses and weights), the same predictions in input order, and at most one compiled
step per bucket length."""

import dataclasses
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from data.glue.records import classifier_dataset, write_classifier_tfrecord
from data.ner.records import ner_dataset, write_ner_tfrecord
from data.records.batching import Batching, bucket_lengths, micro_batches
from tests.helpers.tiny_config import TINY_CONFIG, tiny_config, tiny_train_config
from training.loop import Trainer
from training.strategy import create_strategy
from training.tasks import ClassifierTask, NerTask

SEQ = 48


def _examples(count, seed):
    """Examples of shuffled lengths 2..SEQ, each row recognisable by its first token."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, SEQ + 1, count)
    rows = []
    for length in lengths:
        mask = [1] * int(length) + [0] * (SEQ - int(length))
        ids = [int(x) for x in rng.integers(5, TINY_CONFIG["vocab_size"], SEQ)]
        rows.append(
            types.SimpleNamespace(
                input_ids=[x * m for x, m in zip(ids, mask, strict=True)],
                input_mask=mask,
                segment_ids=[int(j >= length // 2) * m for j, m in enumerate(mask)],
                label_id=int(ids[0] % 3),
                is_real_example=True,
                label_ids=[
                    (x % 4) if m and j % 2 else -1
                    for j, (x, m) in enumerate(zip(ids, mask, strict=True))
                ],
            )
        )
    return rows, lengths


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = tmp_path_factory.mktemp("lengths")
    train, _ = _examples(96, 0)
    test, lengths = _examples(40, 1)  # 40 = 5 batches of 8: no short last batch
    paths = {}
    for name, rows in (("train", train), ("test", test)):
        paths[f"cls_{name}"] = str(out / f"cls_{name}.tf_record")
        paths[f"ner_{name}"] = str(out / f"ner_{name}.tf_record")
        write_classifier_tfrecord(rows, paths[f"cls_{name}"], is_regression=False)
        write_ner_tfrecord(rows, paths[f"ner_{name}"])
    paths["test_lengths"] = lengths
    return paths


def _setup(name, files):
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if name == "classifier":

        def reader(split, batch, training, skip=0, batching=None):
            path = files[f"cls_{split}"]
            return classifier_dataset(path, SEQ, False, batch, training, 3, skip, batching)

        return (lambda: ClassifierTask(config, 3, dropout_rate=0.0)), reader

    def reader(split, batch, training, skip=0, batching=None):
        return ner_dataset(files[f"ner_{split}"], SEQ, batch, training, 3, skip, batching)

    return (lambda: NerTask(config, 4, dropout_rate=0.0)), reader


def _trainer(make_task, tmp_path, pad, **overrides):
    keras.utils.set_random_seed(11)
    config = tiny_train_config(
        tmp_path, pad_to_max_seq_length=pad, num_train_steps=12, num_warmup_steps=2, **overrides
    )
    return Trainer(make_task(), create_strategy("one_device"), config)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["classifier", "ner"])
def test_training_and_prediction_equal_full_length(files, tmp_path, name):
    make_task, reader = _setup(name, files)
    # The cut is real: most training batches are shorter than SEQ.
    cut = [
        b["input_ids"].shape[1]
        for b in reader("train", 8, True, 0, Batching(cut_to_length=True)).take(12)
    ]
    assert all(n in bucket_lengths(SEQ) for n in cut) and min(cut) < SEQ
    runs = {}
    # (pad, accumulation): the cut run with 4 micro-batches per update takes them in order of
    # length, each cut to its own longest sequence.
    for pad, accumulation in ((True, 1), (False, 1), (False, 4)):
        trainer = _trainer(
            make_task, tmp_path / f"{pad}{accumulation}", pad, num_accumulation_steps=accumulation
        )
        assert trainer.plan.cut_to_length is (not pad)
        # The cut batches of one update name their real tokens; micro-batches do not.
        assert trainer.plan.token_slots == (0 if pad or accumulation > 1 else 1)
        losses = trainer.train(lambda skip, b: reader("train", 8, True, skip, b))
        weights = {k: v.numpy() for k, v in trainer.task.variable_map().items()}
        outputs = trainer.predict(lambda b: reader("test", 8, False, 0, b))
        runs[pad, accumulation] = (np.array([loss for _, loss in losses]), weights, outputs)
    full_losses, full_weights, full_out = runs[True, 1]
    _, _, cut_out = runs[False, 1]
    assert len(full_losses) == 12
    for cut_losses, cut_weights, _ in (runs[False, 1], runs[False, 4]):
        assert np.abs(full_losses - cut_losses).max() <= 1e-5
        assert max(np.abs(full_weights[k] - cut_weights[k]).max() for k in full_weights) <= 1e-5
    lengths = files["test_lengths"]
    if name == "classifier":
        np.testing.assert_allclose(cut_out["predictions"], full_out["predictions"], atol=1e-5)
        np.testing.assert_array_equal(cut_out["labels"], full_out["labels"])  # input order
    else:
        # Tags at every real position, in input order; the cut outputs end at the longest
        # bucket.
        for row, length in enumerate(lengths):
            np.testing.assert_array_equal(
                cut_out["predictions"][row, :length], full_out["predictions"][row, :length]
            )
        np.testing.assert_allclose(cut_out["loss_sum"], full_out["loss_sum"], atol=1e-5)


def test_two_micro_batches_train_as_their_whole_batch(files, tmp_path):
    """--num_accumulation_steps=2 sums the two halves' gradients into one update: three
    updates of two micro-batches of 4 leave the weights (and losses) where three of 8 do.
    The quick tier's check of accumulation; the full tier runs 12 updates of 4 micro-batches
    above and through the training harness."""
    make_task, reader = _setup("classifier", files)
    runs = []
    for accumulation in (1, 2):
        keras.utils.set_random_seed(11)
        config = tiny_train_config(
            tmp_path / str(accumulation),
            pad_to_max_seq_length=True,
            num_train_steps=3,
            num_warmup_steps=1,
            num_accumulation_steps=accumulation,
        )
        trainer = Trainer(make_task(), create_strategy("one_device"), config)
        start = {k: v.numpy() for k, v in trainer.task.variable_map().items()}
        losses = trainer.train(lambda skip, b: reader("train", 8, True, skip, b))
        weights = {k: v.numpy() for k, v in trainer.task.variable_map().items()}
        runs.append((np.array([loss for _, loss in losses]), start, weights))
    (losses, start, weights), (micro_losses, micro_start, micro_weights) = runs
    assert len(losses) == 3
    assert max(np.abs(start[k] - micro_start[k]).max() for k in start) == 0
    # Training moved the weights, so equal weights are not equal starting points.
    assert max(np.abs(weights[k] - start[k]).max() for k in start) > 1e-3
    assert np.abs(losses - micro_losses).max() <= 1e-5
    assert max(np.abs(weights[k] - micro_weights[k]).max() for k in weights) <= 1e-5


@pytest.mark.slow
def test_xla_training_on_cut_batches(files, tmp_path):
    """Under XLA the cut batch's real tokens go through the encoder in static token slots, and
    with accumulation the micro-batches stay consecutive slices of the cut batch (the whole
    step one compiled program); both train as full-length batches do."""
    make_task, reader = _setup("classifier", files)
    runs = []
    for pad, accumulation in ((True, 1), (False, 1), (False, 4)):
        trainer = _trainer(
            make_task,
            tmp_path / f"{pad}{accumulation}",
            pad,
            use_xla=True,
            num_accumulation_steps=accumulation,
        )
        assert trainer.plan.micro_batch_width is None and trainer._whole_step_compiled()
        assert trainer.plan.token_slots == (16 if (not pad and accumulation == 1) else 0)
        losses = trainer.train(lambda skip, b: reader("train", 8, True, skip, b))
        weights = {k: v.numpy() for k, v in trainer.task.variable_map().items()}
        runs.append((np.array([loss for _, loss in losses]), weights))
    full_losses, full_weights = runs[0]
    for losses, weights in runs[1:]:
        assert np.abs(full_losses - losses).max() <= 1e-5
        assert max(np.abs(full_weights[k] - weights[k]).max() for k in full_weights) <= 1e-5


@pytest.mark.parametrize("splits", [1, 2])
def test_token_positions_of_each_replica(files, splits):
    """`token_positions`: each replica's real tokens in order (flat positions), then the slot
    past the end, to the same multiple of 16 per example on every replica."""
    options = Batching(cut_to_length=True, token_slots=16, num_pipelines=splits)
    ours = []
    for index in range(splits):
        batching = dataclasses.replace(options, pipeline_index=index)
        ours.append(
            list(
                classifier_dataset(files["cls_train"], SEQ, False, 8, True, 3, 0, batching).take(3)
            )
        )
    whole = list(
        classifier_dataset(
            files["cls_train"], SEQ, False, 8, True, 3, 0, Batching(cut_to_length=True)
        ).take(3)
    )
    for step, batch in enumerate(whole):
        mask = batch["input_mask"].numpy()
        per_replica = np.split(mask, splits)
        # The fewest slots, a multiple of 16 per example, that hold every replica's tokens.
        step_slots = 16 * len(per_replica[0])
        most = max(int(m.sum()) for m in per_replica)
        assert {len(parts[step]["token_positions"]) for parts in ours} == {
            -(-most // step_slots) * step_slots
        }
        for replica, m in enumerate(per_replica):
            np.testing.assert_array_equal(ours[replica][step]["input_mask"], m)
            positions = ours[replica][step]["token_positions"].numpy()
            real = np.flatnonzero(m.reshape(-1))
            np.testing.assert_array_equal(positions[: len(real)], real)
            assert (positions[len(real) :] == m.size).all()


@pytest.mark.parametrize("use_xla", [True, False])
def test_prediction_compiles_once_per_bucket(files, tmp_path, use_xla):
    """XLA compiles one program per bucket length; without XLA the step is traced again
    only once, with the length left open, and that trace serves every bucket."""
    make_task, reader = _setup("classifier", files)
    trainer = _trainer(make_task, tmp_path, False, use_xla=use_xla)
    traces = []
    outputs_fn = trainer.task.prediction_outputs

    def counted(aux):
        traces.append(aux["logits"].shape)  # runs when the step is traced, not per batch
        return outputs_fn(aux)

    trainer.task.prediction_outputs = counted
    seen = {
        int(b["input_ids"].shape[1])
        for b in reader("test", 8, False, 0, Batching(cut_to_length=True, sort_batches=64))
    }
    assert len(seen) >= 3  # several buckets among the 5 sorted batches
    for _ in range(2):  # a second pass reuses every compiled shape
        outputs = trainer.predict(lambda b: reader("test", 8, False, 0, b))
    assert len(outputs["predictions"]) == 40
    assert len(traces) <= len(seen) <= len(bucket_lengths(SEQ))
    if not use_xla:
        assert len(traces) <= 2 < len(seen), traces
    in_order = np.concatenate([b["label_ids"] for b in reader("test", 8, False)])
    np.testing.assert_array_equal(outputs["labels"], in_order)


def test_micro_batches_in_order_of_length(files):
    """micro_batches with a width: the batch's examples, each once, in micro-batches of increasing
    length, each cut to its longest sequence rounded up to a multiple of 8, each with the
    positions of its real tokens."""
    _, reader = _setup("ner", files)
    batch = next(iter(reader("train", 16, True, 0, Batching(cut_to_length=True))))
    part = micro_batches(batch, 4, width=8, token_slots=1, per_token_features=("label_ids",))
    parts = [{k: v.numpy() for k, v in part(tf.constant(i)).items()} for i in range(4)]
    for p in parts:
        # Each micro-batch names its own real tokens: flat positions in order, then the slot
        # past the end up to a multiple of its 4 examples.
        real = np.flatnonzero(p["input_mask"].reshape(-1))
        positions = p.pop("token_positions")
        np.testing.assert_array_equal(positions[: len(real)], real)
        assert (positions[len(real) :] == p["input_mask"].size).all()
        assert len(positions) == -(-len(real) // 4) * 4
    lengths = [p["input_mask"].sum(1) for p in parts]
    flat = np.concatenate(lengths)
    assert (np.diff(flat) >= 0).all() and sorted(flat) == sorted(batch["input_mask"].numpy().sum(1))
    widths = [p["input_ids"].shape[1] for p in parts]
    assert widths == [min(-(-int(n.max()) // 8) * 8, batch["input_ids"].shape[1]) for n in lengths]
    assert widths[0] < widths[-1]
    for p in parts:
        assert p["label_ids"].shape == p["input_ids"].shape
        assert p["input_ids"].shape[0] == 4
    # Every example is in one micro-batch, unchanged but for the padding cut off.
    rows = batch["input_ids"].numpy()
    found = []
    for p in parts:
        width = p["input_ids"].shape[1]
        for ids in p["input_ids"]:
            (match,) = [i for i, r in enumerate(rows) if (r[:width] == ids).all()]
            assert not rows[match, width:].any()
            found.append(match)
    assert sorted(found) == list(range(len(rows)))


def test_only_the_tasks_per_token_features_are_cut(tmp_path):
    """A multi-hot `label_ids` as wide as the sequence (SEQ labels) keeps every label when the
    batch is cut; NER's per-token `label_ids`, named by its task, is cut with the inputs."""
    rows, _ = _examples(16, 2)
    rng = np.random.default_rng(3)
    for row in rows:
        row.label_id = [int(x) for x in rng.integers(0, 2, SEQ)]
    path = str(tmp_path / "multi_label.tf_record")
    write_classifier_tfrecord(rows, path, is_regression=False)
    config = tiny_config()
    multi_label = ClassifierTask(config, SEQ, multi_label=True)
    ner = NerTask(config, 4)
    for task in (ner, multi_label):
        batching = Batching(cut_to_length=True, per_token_features=task.per_token_features)
        if task is ner:
            write_ner_tfrecord(rows, str(tmp_path / "ner.tf_record"))
            batches = ner_dataset(str(tmp_path / "ner.tf_record"), SEQ, 4, False, 4, 0, batching)
        else:
            batches = classifier_dataset(path, SEQ, False, 4, False, 4, 0, batching, SEQ)
        batches = list(batches)
        assert min(b["input_ids"].shape[1] for b in batches) < SEQ
        for b in batches:
            expected = b["input_ids"].shape[1] if task is ner else SEQ
            assert b["label_ids"].shape == (4, expected)
    # The multi-hot labels read back whole, in order.
    labels = np.concatenate([b["label_ids"] for b in batches])
    np.testing.assert_array_equal(labels, [r.label_id for r in rows])
