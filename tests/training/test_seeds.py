"""--init_seed and --data_seed: each seeds one thing, and without them --seed seeds both as before.

The run's real seeding (`command_line.flags.seed_from_flags`), its real model and its real training
input pipeline, compared with the original's one seed (`keras.utils.set_random_seed(seed)` and
the same seed for the shuffle).
"""

import types

import keras
import numpy as np
import pytest

from command_line.flags import seed_from_flags
from data.glue.features import ClassifierFeatures
from data.glue.records import classifier_dataset, write_classifier_tfrecord
from tests.helpers.tiny_config import tiny_config
from training.settings import TrainConfig
from training.tasks import ClassifierTask

SEQ = 8


class _Flags(dict):
    """The parsed flags a runner passes: `flags["x"].value` and `flags.x`."""

    def __getitem__(self, name):
        return types.SimpleNamespace(value=dict.__getitem__(self, name))

    def __getattr__(self, name):
        return dict.__getitem__(self, name)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("seeds") / "train.tf_record")
    features = [
        ClassifierFeatures(
            [101, i + 1] + [0] * (SEQ - 2), [1, 1] + [0] * (SEQ - 2), [0] * SEQ, i % 2
        )
        for i in range(40)
    ]
    write_classifier_tfrecord(features, path, is_regression=False)
    return path


def _run_start(records, seed=3, **given):
    """(the new head's initial weights, the first training batches' examples) of a run."""
    values = {"seed": seed, "init_seed": None, "data_seed": None, "deterministic": False, **given}
    seed_from_flags(_Flags(values))
    config = TrainConfig(output_dir="", **{k: v for k, v in values.items() if k != "deterministic"})
    return _start(records, config.data_seed)


def _start(records, data_seed):
    task = ClassifierTask(tiny_config(), 2)
    task.build_model()
    head = task.variable_map()["output_weights"].numpy()
    dataset = classifier_dataset(records, SEQ, False, 4, True, seed=data_seed)
    order = [batch["input_ids"][:, 1].numpy().tolist() for batch in dataset.take(5)]
    return head, order


def test_defaults_are_the_one_seed(records):
    keras.utils.set_random_seed(3)  # what --seed did before the split
    head, order = _start(records, 3)
    default_head, default_order = _run_start(records)
    np.testing.assert_array_equal(default_head, head)
    assert default_order == order
    same_head, same_order = _run_start(records, init_seed=3, data_seed=3)
    np.testing.assert_array_equal(same_head, head)
    assert same_order == order


def test_data_seed_changes_the_order_only(records):
    head, order = _run_start(records)
    other_head, other_order = _run_start(records, data_seed=4)
    np.testing.assert_array_equal(other_head, head)
    assert other_order != order
    assert sorted(sum(other_order, [])) != sum(other_order, [])  # shuffled at all


def test_init_seed_changes_the_weights_only(records):
    head, order = _run_start(records)
    other_head, other_order = _run_start(records, init_seed=4)
    assert np.abs(other_head - head).max() > 1e-3
    assert other_order == order
