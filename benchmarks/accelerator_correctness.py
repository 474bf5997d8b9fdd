"""The correctness part of the accelerator check: the distributed, mixed-precision and XLA
paths of the shared `Trainer` on this machine's devices, on a tiny model and data (tolerances
as tests/training/test_loop.py and test_mixed_precision.py justify them; benchmarks/README.md,
"Accelerator check", lists the checks). float32 matmuls run in full float32 (TensorFloat-32
off), so float32 is the reference. Writes `{"devices", "replicas", "checks"}` to `--out`.

    python -m benchmarks.accelerator_correctness --out checks.json [--mixed_steps 200]
"""

import argparse
import json
import os
import tempfile
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

UNIT = 2.0**-8  # bfloat16's unit roundoff
WINDOW = 20


def _train(strategy, data, out_dir, initial, batch, **overrides):
    """Trains the tiny model from `initial` weights (None: its own seeded ones).

    Returns:
        (per-step losses, final weights, optimizer steps applied, initial weights).
    """
    import keras
    import numpy as np

    from benchmarks.tiny_fixtures import TINY_CONFIG
    from data.records import input_pipeline
    from modeling.config import BertConfig
    from training.loop import Trainer
    from training.settings import TrainConfig
    from training.tasks import PretrainingTask

    keras.utils.set_random_seed(1)
    config = BertConfig(**TINY_CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    # Every step logged, nothing compiled; the loop's own defaults otherwise.
    settings = dict(learning_rate=1e-3, iterations_per_loop=1, log_every_steps=1, seed=7)
    settings.update(num_train_steps=10, num_warmup_steps=2, train_batch_size=batch)
    settings.update(overrides)
    train_config = TrainConfig(output_dir=str(out_dir), **settings)
    trainer = Trainer(PretrainingTask(config), strategy, train_config)
    variables = trainer.task.variable_map()
    if initial is not None:
        # Every run starts from the reference run's weights, whatever the strategy.
        for name, value in initial.items():
            variables[name].assign(value)
    start = {n: v.numpy() for n, v in variables.items()}
    losses = trainer.train(
        lambda skip, batching: input_pipeline.pretraining_dataset(
            [data], 32, 5, batch, True, seed=7, skip_batches=skip, batching=batching
        )
    )
    weights = {n: v.numpy() for n, v in variables.items()}
    steps = int(trainer.optimizer.iterations.numpy())
    return np.array([loss for _, loss in losses]), weights, steps, start


def _max_gap(a, b):
    import numpy as np

    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def _agree(name, runs, tolerance, note=""):
    (loss_a, w_a, *_), (loss_b, w_b, *_) = runs
    loss_gap = float(abs(loss_a - loss_b).max())
    weight_gap = _max_gap(w_a, w_b)
    passed = len(loss_a) == len(loss_b) and loss_gap <= tolerance and weight_gap <= tolerance
    detail = f"max loss gap {loss_gap:.2e}, max weight gap {weight_gap:.2e} (<= {tolerance:g})"
    return {"name": name, "passed": passed, "detail": detail + note}


def _tracks(name, curve, reference, steps, expected_steps):
    import numpy as np

    windows = len(reference) // WINDOW
    first = abs(curve[0] - reference[0]) / reference[0]
    gap = float((np.abs(curve - reference) / reference).max())
    means = curve[: windows * WINDOW].reshape(windows, WINDOW).mean(axis=1)
    ref_means = reference[: windows * WINDOW].reshape(windows, WINDOW).mean(axis=1)
    window_gap = float((np.abs(means - ref_means) / ref_means).max())
    passed = (
        steps == expected_steps
        and not np.array_equal(curve, reference)
        and first <= UNIT
        and gap <= 4 * UNIT
        and window_gap <= UNIT
    )
    detail = (
        f"{len(curve)} steps ({steps} applied): first-step gap {first:.2%} (<= {UNIT:.2%}), "
        f"max gap {gap:.2%} (<= {4 * UNIT:.2%}), max {WINDOW}-step mean gap "
        f"{window_gap:.2%} (<= {UNIT:.2%})"
    )
    return {"name": name, "passed": bool(passed), "detail": detail}


def _guarded(name, fn):
    """Runs one check; an exception is that check's failure, and the others still run."""
    try:
        return fn()
    except Exception as error:  # This check fails; the others still run.
        traceback.print_exc()
        return {"name": name, "passed": False, "detail": f"{type(error).__name__}: {error}"}


def run_checks(work_dir, mixed_steps):
    import tensorflow as tf
    from tensorflow.python.framework import config as tf_config

    from benchmarks.tiny_fixtures import write_pretraining_records
    from training.strategy import create_strategy

    tf.config.experimental.enable_tensor_float_32_execution(False)
    gpus = tf.config.list_physical_devices("GPU")
    # The mirrored strategy first: without GPUs it splits the CPU before anything else runs.
    mirrored = create_strategy("mirrored", num_cpu_devices=None if gpus else 2)
    one = create_strategy("one_device")
    replicas = mirrored.num_replicas_in_sync
    batch = 8 * replicas if 8 % replicas else 8
    data = os.path.join(work_dir, "data.tfrecord")
    write_pretraining_records(data, num_examples=256)

    def out(name):
        return os.path.join(work_dir, name)

    reference = {}

    def distributed():
        tf.config.experimental.enable_op_determinism()
        try:
            base = _train(one, data, out("one"), None, batch)
            reference["base"] = base
            other = _train(mirrored, data, out("mirrored"), base[3], batch)
        finally:
            tf_config.disable_op_determinism()
        note = f"; {replicas} replica(s), global batch {batch}"
        if replicas == 1:
            note += " (one GPU: the mirrored path with a single replica)"
        return _agree("mirrored_vs_one_device", (base, other), 1e-5, note)

    def xla():
        base = reference.get("base") or _train(one, data, out("plain"), None, batch)
        compiled = _train(one, data, out("xla"), base[3], batch, use_xla=True)
        return _agree("xla_vs_no_xla", (base, compiled), 1e-4)

    checks = [_guarded("mirrored_vs_one_device", distributed), _guarded("xla_vs_no_xla", xla)]
    settings = dict(num_train_steps=mixed_steps, num_warmup_steps=WINDOW)

    def curve(precision):
        start = reference["base"][3] if "base" in reference else None
        return _train(one, data, out(precision), start, batch, precision=precision, **settings)

    float32 = {}
    failed = _guarded("float32_reference_curve", lambda: float32.update(run=curve("float32")))
    if failed is not None:
        checks.append(failed)
    for precision in ("mixed_float16", "mixed_bfloat16"):
        name = f"{precision}_tracks_float32"

        def track(precision=precision, name=name):
            if "run" not in float32:
                raise RuntimeError("no float32 reference curve (see float32_reference_curve)")
            loss, _, steps, _ = curve(precision)
            return _tracks(name, loss, float32["run"][0], steps, mixed_steps)

        checks.append(_guarded(name, track))
    devices = [d.name for d in tf.config.list_logical_devices()]
    return {"devices": devices, "replicas": replicas, "checks": checks}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="JSON file to write.")
    parser.add_argument("--mixed_steps", type=int, default=200, help="Steps of each curve.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="accelerator_checks_") as work_dir:
        result = run_checks(work_dir, args.mixed_steps)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    for check in result["checks"]:
        print(f"{'PASS' if check['passed'] else 'FAIL'} {check['name']}: {check['detail']}")


if __name__ == "__main__":
    main()
