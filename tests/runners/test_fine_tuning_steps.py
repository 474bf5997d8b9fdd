"""The fine-tuning runners' step counts (jobs/fine_tuning.py) against the original
run_classifier.py / run_squad.py arithmetic: `int(len(train_examples) / train_batch_size *
num_train_epochs)` steps and `int(num_train_steps * warmup_proportion)` warmup steps."""

import pytest

from jobs.fine_tuning import with_training_steps
from tests.helpers.tiny_config import tiny_train_config


@pytest.mark.parametrize(
    "examples, batch, epochs, proportion",
    [
        (3668, 32, 3.0, 0.1),  # MRPC's train set at the README's flags
        (87599, 12, 2.0, 0.1),  # SQuAD 1.1 at run_squad.py's README flags
        (100, 8, 3.0, 0.1),
        (1000, 16, 0.5, 0.25),
        (7, 32, 3.0, 0.1),
        (640, 32, 3.0, 0.0),
    ],
)
def test_steps_and_warmup_are_the_originals(tmp_path, examples, batch, epochs, proportion):
    config = tiny_train_config(tmp_path, train_batch_size=batch)
    counted = with_training_steps(config, examples, epochs, proportion)
    steps = int(examples / batch * epochs)
    # The original would run 0 steps where this one runs 1 (7 examples, batch 32).
    assert counted.num_train_steps == max(steps, 1)
    assert counted.num_warmup_steps == int(counted.num_train_steps * proportion)
    assert counted.train_batch_size == batch and counted.output_dir == str(tmp_path)
