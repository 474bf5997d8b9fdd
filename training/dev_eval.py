"""A fine-tuning run's dev evaluations: `eval_history.jsonl` and `best_checkpoint/`.

Every dev evaluation of a run with --do_eval (the final one, and with --eval_every_steps=N
also one every N training steps) appends one line to `output_dir/eval_history.jsonl`
(`data.dev_metrics.history_entry`: step, official metric, its value, every eval_results entry
and, for classifiers, the count of each predicted class), flushed and synced to disk before the
run goes on. With --eval_every_steps, `output_dir/best_checkpoint/` holds the weights of the
best evaluation so far in the original's layout (`bert_model.ckpt.*` under Google's names,
`bert_config.json`) with its `eval_results.txt`, replaced as a whole when an evaluation beats it.

The evaluation itself is the job's own (`evaluate`): the code path of its final --do_eval, so a
line's value is what `eval_results.txt` says for the same weights. Under a multi-worker strategy
every worker evaluates (the prediction steps are collective), and only the chief writes.

A resumed run keeps the best it had: it reads `best_checkpoint/eval_results.txt`.
"""

import os

import numpy as np
import tensorflow as tf
from absl import logging

from data.dev_metrics import (
    BEST_CHECKPOINT,
    EVAL_HISTORY,
    history_entry,
    history_line,
    read_eval_results,
)
from fileio.atomic import atomic_directory, write_atomically
from fileio.reading import is_file, is_remote, open_for_reading
from training.strategy import is_chief
from training.summaries import eval_results_text, write_eval_results


def predicted_class_counts(probabilities, real, labels):
    """label -> how many real examples `probabilities` [num_examples, num_labels] predict as it
    (every label listed, 0 for those never predicted)."""
    counts = np.bincount(np.argmax(probabilities[real > 0], axis=-1), minlength=len(labels))
    return dict(zip(labels, counts.tolist(), strict=True))


class DevEvaluation:
    """Runs the job's dev evaluation and keeps the history and the best checkpoint.

    Args:
        trainer: the run's `training.loop.Trainer`.
        output_dir: this worker's output directory (the run's on the chief).
        metric: the official metric's key (`data.dev_metrics.official_metric`).
        evaluate: `() -> (results, predicted_classes or None)`: the job's dev evaluation of
            the trainer's current weights (`results` as eval_results.txt has them, without
            global_step).
        bert_config: the encoder's `BertConfig`, saved beside the best weights.
        keep_best: keep `best_checkpoint/` (periodic evaluation during training).
    """

    def __init__(self, trainer, output_dir, metric, evaluate, bert_config, keep_best):
        self.trainer, self.output_dir, self.metric = trainer, output_dir, metric
        self._evaluate, self.bert_config, self.keep_best = evaluate, bert_config, keep_best
        self.writer = is_chief(trainer.strategy)
        self.best = self._previous_best() if keep_best else None

    def _previous_best(self):
        """(value, step) of the best checkpoint an interrupted run of output_dir kept."""
        folder = os.path.join(self.output_dir, BEST_CHECKPOINT)
        results = read_eval_results(folder) if self.writer else {}
        if not isinstance(results.get(self.metric), float):
            return None
        best = (results[self.metric], int(results.get("global_step", -1)))
        logging.info("Best dev %s so far: %s at step %d (%s)", self.metric, *best, folder)
        return best

    def __call__(self, step):
        """The periodic evaluation at `step` (the Trainer's hook); returns the results."""
        results, predicted_classes = self._evaluate()
        return self.record(step, results, predicted_classes)

    def final(self, **options):
        """The run's --do_eval: evaluates (`options` go to the job's `evaluate`), writes
        `output_dir/eval_results.txt` as the original did, and records it; returns the
        results."""
        results, predicted_classes = self._evaluate(**options)
        results = {**results, "global_step": self.trainer.step}
        write_eval_results(self.output_dir, results)
        return self.record(self.trainer.step, results, predicted_classes)

    def record(self, step, results, predicted_classes=None):
        """Keeps the evaluation of the weights at `step`: best checkpoint first (so that the
        history never names a best the folder lacks), then the history line, then one log line."""
        results = {**results, "global_step": step}
        entry = history_entry(step, self.metric, results, predicted_classes)
        value = entry["value"]
        if self.keep_best and (self.best is None or value > self.best[0]):
            self.best = (value, step)
            if self.writer:
                self._save_best(results)
        if self.writer:
            append_history(self.output_dir, entry)
        best = f"; best {self.best[0]:.6g} at step {self.best[1]}" if self.best else ""
        logging.info("Dev evaluation at step %d: %s = %.6g%s", step, self.metric, value, best)
        return results

    def _save_best(self, results):
        path = os.path.join(self.output_dir, BEST_CHECKPOINT)
        with atomic_directory(path, overwrite=True) as temp:
            tf.io.gfile.makedirs(temp)
            self.trainer.export_original(temp, self.bert_config)
            write_atomically(os.path.join(temp, "eval_results.txt"), eval_results_text(results))
        logging.info("Saved the best dev evaluation's weights in %s", path)


def append_history(output_dir, entry):
    """Appends `entry` to `output_dir/eval_history.jsonl`, synced to disk before returning.

    A line cut short by a killed process stays as it is (readers skip it); the next line starts
    on a line of its own. Object stores cannot append: there the file is rewritten whole.
    """
    path = os.path.join(output_dir, EVAL_HISTORY)
    line = history_line(entry)
    if is_remote(path):
        old = ""
        if is_file(path):
            with open_for_reading(path) as f:
                old = f.read()
        if old and not old.endswith("\n"):
            old += "\n"
        write_atomically(path, old + line)
        return
    with open(path, "a+b") as f:
        f.seek(0, os.SEEK_END)
        if f.tell():
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                line = "\n" + line
        f.write(line.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())
