"""The one tiny BERT configuration of the tests (the original modeling_test's sizes, 2 layers).

`TINY_CONFIG` is a plain dict so that the oracles, which run the original TF1 code in a child
process, can use it without importing this project's Keras 3 model code.
"""

import json

# One home with the benchmarks' tiny fixtures (tests may import benchmarks, not the reverse).
from benchmarks.tiny_fixtures import TINY_CONFIG


def tiny_config(**overrides):
    """A `BertConfig` of `TINY_CONFIG` with `overrides`."""
    from modeling.config import BertConfig

    return BertConfig(**{**TINY_CONFIG, **overrides})


def write_tiny_config(path, **overrides):
    """Writes `TINY_CONFIG` with `overrides` as a bert_config.json."""
    with open(path, "w") as f:
        json.dump({**TINY_CONFIG, **overrides}, f)


def tiny_train_config(output_dir, **overrides):
    """A `TrainConfig` for tiny runs of the loop: every step logged, nothing compiled; the
    loop's own defaults otherwise."""
    from training.settings import TrainConfig

    values = dict(
        learning_rate=1e-3,
        train_batch_size=8,
        iterations_per_loop=1,
        log_every_steps=1,
        seed=7,
        num_train_steps=10,
        num_warmup_steps=2,
    )
    return TrainConfig(output_dir=str(output_dir), **{**values, **overrides})
