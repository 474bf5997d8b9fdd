"""Progress lines, TensorBoard summaries and the original eval_results.txt."""

import datetime
import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from fileio.atomic import write_atomically


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
    """Writes `key = value` lines, keys sorted, as the original; also logs them under `title`."""
    path = os.path.join(output_dir, filename)
    logging.info("***** %s *****", title)
    lines = []
    for key in sorted(results):
        value = results[key]
        # The original's values were float32 numpy scalars; str() of those is what it wrote.
        text = str(np.float32(value)) if isinstance(value, float) else str(value)
        logging.info("  %s = %s", key, text)
        lines.append(f"{key} = {text}\n")
    write_atomically(path, "".join(lines))
    return path
