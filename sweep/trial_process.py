"""One trial: the runner's own process in the trial's folder, watched until it ends.

The runner writes each dev evaluation to `eval_history.jsonl` (`--eval_every_steps`); every
new score is reported to Optuna, and when the pruner says the trial has fallen behind the
runner gets SIGTERM (it saves a checkpoint and exits). A runner that fails is reported with the
last line it printed; the sweep goes on.
"""

import dataclasses
import os
import signal
import subprocess
import time

from data.dev_metrics import read_eval_history, read_eval_results

POLL_S = 2.0
STOP_WAIT_S = 120


@dataclasses.dataclass
class Outcome:
    """How a trial ended.

    Attributes:
        status: "complete", "pruned", "failed" or "interrupted" (the sweep was stopped).
        dev_metric: the final dev score (complete), the last reported one (pruned) or None.
        step: the last step evaluated on dev, if any.
        error: the runner's last line, for a failed trial.
        wall_s: seconds the process ran.
    """

    status: str
    dev_metric: float | None = None
    step: int | None = None
    error: str | None = None
    wall_s: float = 0.0


def last_line(path):
    """The last non-empty line of a text file (the runner's closing sentence)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 8192))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "no output"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


class TrialProcess:
    """Runs one trial's command and reports its dev scores to an Optuna trial.

    Args:
        argv: the full command, e.g. [python, run_classifier.py, ..., --output_dir=...].
        output_dir: the trial's folder (the runner's --output_dir); its `trial.log` gets the
            runner's output.
        metric: the eval_results.txt key ranking trials.
        device: a GPU index for CUDA_VISIBLE_DEVICES, or None to leave the environment as is.
        stop_event: a `threading.Event` set when the whole sweep is asked to stop.
    """

    def __init__(self, argv, output_dir, metric, device=None, stop_event=None):
        self.argv, self.output_dir, self.metric = argv, output_dir, metric
        self.device, self.stop_event = device, stop_event
        self.log_path = os.path.join(output_dir, "trial.log")

    def _start(self):
        os.makedirs(self.output_dir, exist_ok=True)
        env = dict(os.environ)
        if self.device is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.device)
        log = open(self.log_path, "a")
        device = "" if self.device is None else f" on device {self.device}"
        when = time.strftime("%Y-%m-%d %H:%M:%S")
        log.write(f"==== run_sweep.py: {when}{device} {self.argv}\n")
        log.flush()
        process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        return process

    def _stop(self, process):
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def run(self, trial):
        """Runs the trial to its end; returns its `Outcome`."""
        start = time.time()
        process = self._start()
        reported, last = set(), None
        while True:
            ended = process.poll() is not None
            for entry in read_eval_history(self.output_dir):
                step, value = entry["step"], entry["value"]
                last = (step, value)
                if step not in reported and value is not None:
                    trial.report(value, step)
                    reported.add(step)
            if ended:
                break
            if reported and trial.should_prune():
                self._stop(process)
                return Outcome("pruned", last[1], last[0], wall_s=time.time() - start)
            if self.stop_event is not None and self.stop_event.is_set():
                self._stop(process)
                return Outcome("interrupted", wall_s=time.time() - start)
            time.sleep(POLL_S)
        wall = time.time() - start
        step = last[0] if last else None
        if process.returncode != 0:
            return Outcome("failed", step=step, error=last_line(self.log_path), wall_s=wall)
        results = read_eval_results(self.output_dir)
        value = results.get(self.metric)
        if value is None:
            return Outcome(
                "failed",
                step=step,
                error=f"{self.output_dir}/eval_results.txt has no {self.metric}",
                wall_s=wall,
            )
        return Outcome("complete", value, step, wall_s=wall)
