"""Progress lines, TensorBoard summaries and the original eval_results.txt."""

import datetime
import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from fileio.atomic import write_atomically
from fileio.flags_file import FLAGS_FILE


class Progress:
    """Formats `step/total, loss, lr, examples/s, ETA` lines."""

    def __init__(self, start_step, total_steps, batch_size):
        self.total, self.batch = total_steps, batch_size
        self.last_step, self.last_time = start_step, time.monotonic()
        self.rate = 0.0

    def log(self, step, loss, learning_rate, **metrics):
        now = time.monotonic()
        if step > self.last_step:
            self.rate = (step - self.last_step) * self.batch / max(now - self.last_time, 1e-9)
        eta = (self.total - step) * self.batch / self.rate if self.rate else 0.0
        extra = "".join(f" {k}={v:.4f}" for k, v in metrics.items())
        logging.info(
            "step %d/%d loss=%.4f lr=%.3g%s %.1f examples/s ETA %s",
            step,
            self.total,
            loss,
            learning_rate,
            extra,
            self.rate,
            datetime.timedelta(seconds=int(eta)),
        )
        self.last_step, self.last_time = step, now


class InferenceProgress:
    """`<title>: n/total examples, examples/s, ETA` lines for evaluation and prediction passes.

    A line every `every_s` seconds (and one at the end), so a long pass such as SQuAD's dev
    set (10k+ examples) shows that it moves, as training's progress lines do; short passes
    print only the closing line.

    Args:
        title: e.g. "predict" or "eval".
        total: examples (or batches, with `unit`) the pass will see; None if unknown.
        unit: what is counted: the model's rows, so "windows" where an example has several.
        every_s: seconds between lines.
        of: what the counted rows are parts of, e.g. "12 examples" for a classifier's windows
            ("predict: 36/36 windows of 12 examples"); None when each row is a whole item.
    """

    def __init__(self, title, total=None, unit="examples", every_s=30.0, of=None):
        self.title, self.total, self.unit, self.every_s = title, total, unit, every_s
        self.of = of
        self.done = 0
        self.start = self.last = time.monotonic()

    def line(self, now=None):
        """The progress line as of `now` (`time.monotonic()`; default: the present)."""
        now = time.monotonic() if now is None else now
        rate = self.done / max(now - self.start, 1e-9)
        counted = f"{self.done}/{self.total}" if self.total else f"{self.done}"
        eta = ""
        if self.total and rate:
            remaining = max(self.total - self.done, 0) / rate
            eta = f" ETA {datetime.timedelta(seconds=int(remaining))}"
        of = f" of {self.of}" if self.of else ""
        return f"{self.title}: {counted} {self.unit}{of}, {rate:.1f} {self.unit}/s{eta}"

    def update(self, count):
        """Counts `count` more items; logs a line when `every_s` has passed since the last."""
        self.done += int(count)
        now = time.monotonic()
        if now - self.last >= self.every_s:
            logging.info("%s", self.line(now))
            self.last = now

    def finish(self):
        """The closing line: how many items, at what rate."""
        logging.info("%s", self.line())


class SummaryWriter:
    """TensorBoard scalars under `output_dir/<name>` (no-op when disabled)."""

    def __init__(self, output_dir, name, enabled=True):
        self._writer = (
            tf.summary.create_file_writer(os.path.join(output_dir, name)) if enabled else None
        )

    def scalars(self, step, **values):
        if self._writer is None:
            return
        with self._writer.as_default(step=step):
            for key, value in values.items():
                tf.summary.scalar(key, value)
        self._writer.flush()

    def close(self):
        if self._writer is not None:
            self._writer.close()


def write_eval_results(output_dir, results, filename="eval_results.txt", title="Eval results"):
    """Writes `key = value` lines, keys sorted, as the original; also logs them under `title`.

    The numeric results also go to TensorBoard, beside the training curves (`output_dir/train`):
    under `output_dir/eval` (or `output_dir/<filename's stem>` for another file, e.g. NER's
    `test_results`) at `results["global_step"]`, the step they belong to.
    """
    path = os.path.join(output_dir, filename)
    _write_result_scalars(output_dir, filename, results)
    logging.info("***** %s *****", title)
    text = eval_results_text(results)
    for line in text.splitlines():
        logging.info("  %s", line)
    write_atomically(path, text)
    return path


def eval_results_text(results):
    """The `key = value` lines of an eval_results.txt, keys sorted, as the original wrote them."""
    lines = []
    for key in sorted(results):
        value = results[key]
        # The original's values were float32 numpy scalars; str() of those is what it wrote.
        text = str(np.float32(value)) if isinstance(value, float) else str(value)
        lines.append(f"{key} = {text}\n")
    return "".join(lines)


def _write_result_scalars(output_dir, filename, results):
    stem = os.path.splitext(filename)[0]
    name = "eval" if stem == "eval_results" else stem
    scalars = {
        key: float(value)
        for key, value in results.items()
        if key != "global_step" and isinstance(value, (int, float, np.number))
    }
    writer = SummaryWriter(output_dir, name)
    writer.scalars(int(results.get("global_step", 0)), **scalars)
    writer.close()


def save_run_flags(output_dir, run_flags):
    """Saves the run's flags (`TrainConfig.run_flags`, a flagfile) as `output_dir/flags.txt`, so
    a run can be told apart from another and repeated; nothing when there are none."""
    if run_flags:
        tf.io.gfile.makedirs(output_dir)
        write_atomically(os.path.join(output_dir, FLAGS_FILE), run_flags)
