"""Runs the original ``bert.create_pretraining_data`` for several flag sets in one process.

Usage::

    python -m tests.oracles.original_pretraining_data CONFIGS.json

``CONFIGS.json`` holds a list of objects with the original's flag names as keys (``input_file``,
``output_file``, ``vocab_file``, ``do_lower_case``, ``max_seq_length``,
``max_predictions_per_seq``, ``random_seed``, ``dupe_factor``, ``masked_lm_prob``,
``short_seq_prob``) plus ``log_file``: where to write the messages the original logs, one per
line. Each flag set runs the original's own ``main`` with its module-level FLAGS set to those
values, so TensorFlow is imported once for all of them.
"""

import json
import logging
import sys

_FLAG_NAMES = (
    "input_file", "output_file", "vocab_file", "do_lower_case", "max_seq_length",
    "max_predictions_per_seq", "random_seed", "dupe_factor", "masked_lm_prob", "short_seq_prob",
)  # fmt: skip


class _MessageFile(logging.Handler):
    def __init__(self, path):
        super().__init__(level=logging.INFO)
        self._file = open(path, "w", encoding="utf-8")  # closed in close()

    def emit(self, record):
        self._file.write(record.getMessage() + "\n")

    def close(self):
        self._file.close()
        super().close()


def main(argv):
    with open(argv[1], encoding="utf-8") as reader:
        configs = json.load(reader)
    from absl import flags
    from bert import create_pretraining_data as original

    flags.FLAGS.mark_as_parsed()
    logger = logging.getLogger("tensorflow")
    for config in configs:
        handler = _MessageFile(config.pop("log_file"))
        logger.addHandler(handler)
        try:
            # Flags a set leaves out take the original's defaults, not the previous set's values.
            for name in _FLAG_NAMES:
                setattr(flags.FLAGS, name, flags.FLAGS[name].default)
            for name, value in config.items():
                setattr(flags.FLAGS, name, value)
            original.main(None)
        finally:
            logger.removeHandler(handler)
            handler.close()


if __name__ == "__main__":
    main(sys.argv)
