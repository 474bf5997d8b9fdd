"""eval_history.jsonl: appended line by line, read back whole by `read_eval_history` (the
sweep's reader) whatever a killed process left."""

import json
import os

import numpy as np

from data.dev_metrics import EVAL_HISTORY, history_entry, read_eval_history
from training.dev_eval import append_history, predicted_class_counts


def _entry(step, value):
    return history_entry(step, "eval_f1", {"eval_f1": value, "eval_loss": 0.5}, {"0": 3, "1": 1})


def test_reader_skips_a_cut_line_and_keeps_the_last_of_a_step(tmp_path):
    for step, value in ((2, 0.25), (4, 0.5)):
        append_history(tmp_path, _entry(step, value))
    path = tmp_path / EVAL_HISTORY
    whole = path.read_text()
    # A process killed while appending step 6: its line is cut short.
    path.write_text(whole + json.dumps(_entry(6, 0.75))[:40])
    assert [e["step"] for e in read_eval_history(tmp_path)] == [2, 4]
    # The resumed run evaluates step 4 again and goes on; the next line starts a line of its own.
    append_history(tmp_path, _entry(4, 0.625))
    append_history(tmp_path, _entry(6, 0.75))
    lines = path.read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[-1])["step"] == 6
    history = read_eval_history(tmp_path)
    assert [(e["step"], e["value"]) for e in history] == [(2, 0.25), (4, 0.625), (6, 0.75)]
    assert history[0] == {
        "step": 2,
        "metric": "eval_f1",
        "value": 0.25,
        "results": {"eval_f1": 0.25, "eval_loss": 0.5},
        "predicted_classes": {"0": 3, "1": 1},
    }


def test_reader_of_a_run_without_history(tmp_path):
    assert read_eval_history(tmp_path) == []


def test_predicted_class_counts_count_real_examples_only():
    probabilities = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.1, 0.9]])
    real = np.array([1, 1, 1, 0])
    assert predicted_class_counts(probabilities, real, ["neg", "pos"]) == {"neg": 2, "pos": 1}


class _Trainer:
    """What DevEvaluation reads of a Trainer: its strategy, step and original-layout export."""

    def __init__(self):
        import tensorflow as tf

        self.strategy, self.step = tf.distribute.get_strategy(), 0

    def export_original(self, folder, bert_config):
        with open(os.path.join(folder, "weights_of_step.txt"), "w") as f:
            f.write(str(self.step))


def test_best_checkpoint_keeps_the_best_evaluation_and_a_resumed_run_knows_it(tmp_path):
    from training.dev_eval import DevEvaluation

    scores = iter([0.5, 0.8, 0.6, 0.8, 0.7])
    trainer = _Trainer()

    def evaluation(**options):
        return {"eval_accuracy": next(scores)}, None

    def run(keep_best=True):
        return DevEvaluation(trainer, str(tmp_path), "eval_accuracy", evaluation, None, keep_best)

    dev = run()
    for trainer.step in (10, 20, 30):
        dev(trainer.step)
    best = tmp_path / "best_checkpoint"
    assert dev.best == (0.8, 20)
    assert (best / "weights_of_step.txt").read_text() == "20"
    # A resumed run starts from the kept best: a tie does not replace it, nor does a worse one.
    resumed = run()
    assert resumed.best == (0.8, 20)
    for trainer.step in (40, 50):
        resumed(trainer.step)
    assert resumed.best == (0.8, 20) and (best / "weights_of_step.txt").read_text() == "20"
    assert [entry["step"] for entry in read_eval_history(str(tmp_path))] == [10, 20, 30, 40, 50]
