"""TrainConfig.check: one error naming the flag and the fix for settings the loop cannot run."""

import pytest

from tests.helpers.tiny_config import tiny_train_config


def test_batch_must_split_over_replicas_and_micro_batches(tmp_path):
    config = tiny_train_config(tmp_path, train_batch_size=12, num_accumulation_steps=4)
    config.check(num_replicas=1)  # 12 = 1 x 4 x 3
    with pytest.raises(ValueError, match=r"--train_batch_size=12 .* replicas \(2\) times "):
        config.check(num_replicas=2)


@pytest.mark.parametrize(
    "name", ["num_train_steps", "save_checkpoints_steps", "iterations_per_loop", "log_every_steps"]
)
def test_counts_must_be_positive(tmp_path, name):
    config = tiny_train_config(tmp_path, **{name: 0})
    with pytest.raises(ValueError, match=f"--{name} must be at least 1, got 0"):
        config.check(num_replicas=1)
