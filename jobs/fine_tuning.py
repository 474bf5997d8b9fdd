"""What the fine-tuning runs share: their step counts, record files and log lines.

run_classifier and run_squad read examples, write them as `<name>.tf_record` in
output_dir on every run (as the original does), train for a number of epochs and read the
records back for evaluation and prediction.
"""

import dataclasses
import os

from absl import logging

from data.records.input_pipeline import naming_damaged_records
from training.dev_eval import DevEvaluation


def with_training_steps(train_config, num_examples, num_train_epochs, warmup_proportion):
    """Returns `train_config` with the original's step counts for `num_examples` examples.

    The original's arithmetic: `int(examples / batch * epochs)` steps (at least 1 here) and
    `int(steps * warmup_proportion)` warmup steps.
    """
    steps = max(int(num_examples / train_config.train_batch_size * num_train_epochs), 1)
    return dataclasses.replace(
        train_config, num_train_steps=steps, num_warmup_steps=int(steps * warmup_proportion)
    )


def write_records(output_dir, name, write_fn, features, **options):
    """Writes `<output_dir>/<name>.tf_record` with `write_fn(features, path, **options)`.

    Returns:
        The path written.
    """
    path = os.path.join(output_dir, f"{name}.tf_record")
    write_fn(features, path, **options)
    return path


def reading_own_records(path):
    """A `with` block reading the run's own `path`: a damaged record there (the disk lost it
    since this run wrote it) names the file instead of TensorFlow's op trace."""
    return naming_damaged_records(
        [path], "run the command again to write it anew, and check the disk if it happens again"
    )


def progress_counting(num_rows, num_items, item="examples"):
    """How a prediction pass's progress lines count its `num_rows` model rows, made from
    `num_items` items (examples, or NER's sentences): `Trainer.predict`'s `unit` and `of`.

    Each item gives one row or more, so equal counts mean one row per item and the lines count
    the items; otherwise the rows are windows, and the lines say so rather than call a window
    an example: "predict: 36/36 windows of 12 examples".
    """
    if num_rows == num_items:
        return {"unit": item, "of": None}
    return {"unit": "windows", "of": f"{num_items} {item}"}


def log_inference_set(title, num_examples, num_padding, batch_size):
    """The original's header of an evaluation or prediction pass."""
    logging.info("***** Running %s *****", title)
    logging.info(
        "  Num examples = %d (%d actual, %d padding)",
        num_examples,
        num_examples - num_padding,
        num_padding,
    )
    logging.info("  Batch size = %d", batch_size)


def dev_evaluation(run, trainer, output_dir, metric, evaluate, bert_config):
    """The run's dev evaluations (`training.dev_eval.DevEvaluation`) with --do_eval, else None;
    it keeps best_checkpoint/ when the run also trains with --eval_every_steps.

    Args:
        run: the run's settings (`do_train`, `do_eval`).
        trainer: its `Trainer`.
        output_dir: this worker's output directory.
        metric: the official dev metric's key.
        evaluate: `() -> (results, predicted_classes or None)`, the job's dev evaluation.
        bert_config: the encoder's `BertConfig`.
    """
    if not run.do_eval:
        return None
    keep_best = run.do_train and trainer.config.eval_every_steps > 0
    return DevEvaluation(trainer, output_dir, metric, evaluate, bert_config, keep_best)
