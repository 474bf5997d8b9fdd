"""Peak memory and step time with and without gradient checkpointing, and the memory
estimate beside the measured peak; see benchmarks/README.md ("Memory").

    python -m benchmarks.memory --seq 512 --preds 80 --batch_base 4 --batch_large 1 \
        --steps 1 --warmup 1 --rounds 1
"""

import os
import resource
import tempfile

from benchmarks import harness
from benchmarks.common import bert_config, device_memory, device_name, timed_trainer

CONFIG_NAMES = ("base", "large")
PRECISIONS = ("float32", "mixed_bfloat16")


def _peak_bytes():
    gpu = device_memory()
    if gpu is not None:
        return gpu
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _rss_bytes():
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))


def measure(args, peer):
    import tensorflow as tf

    from benchmarks.pretraining_loop import write_records
    from data.records import input_pipeline
    from training import memory_plan
    from training.distributed_input import whole_batches
    from training.strategy import create_strategy
    from training.tasks import PretrainingTask

    name, precision, mode = peer.options["config"], peer.options["precision"], peer.options["mode"]
    batch = args.batch_large if name == "large" else args.batch_base
    data = os.path.join(tempfile.gettempdir(), f"bench_memory_{args.seq}_{args.preds}.tfrecord")
    harness.written_once(data, lambda temp: write_records(temp, 64, args.seq, args.preds))
    config = bert_config(name)
    strategy = create_strategy("one_device")
    trainer = timed_trainer(
        PretrainingTask(config), 1, strategy, num_train_steps=10**6, num_warmup_steps=100,
        train_batch_size=batch, precision=precision, gradient_checkpointing=mode == "checkpointing",
    )  # fmt: skip
    iterator = whole_batches(
        strategy,
        lambda batching: input_pipeline.pretraining_dataset(
            [data], args.seq, args.preds, batch, True, seed=1, batching=batching
        ),
        is_training=True,
        options=trainer.plan.training(),
    )
    before = _rss_bytes()
    device_memory(reset=True)
    losses = []
    times, cpu_times = harness.time_calls(
        lambda: losses.append(float(trainer._train_steps(iterator, tf.constant(1)))),
        args.steps,
        args.warmup,
    )
    loss, peak = losses[-1], _peak_bytes()
    device = "gpu" if device_memory() is not None else "cpu"
    guess = memory_plan.estimate(
        config, args.seq, precision, mode == "checkpointing", args.preds, device=device
    )
    estimated = guess.peak(batch)
    return {
        "device": device_name(),
        "batch": batch,
        "loss": loss,
        "step_s": sorted(times)[len(times) // 2],
        "examples_per_s": batch / sorted(times)[len(times) // 2],
        # CPU seconds of the process (all cores): less disturbed by other jobs than wall time.
        "cpu_s": sorted(cpu_times)[len(cpu_times) // 2],
        "peak_gib": peak / memory_plan.GIB,
        "before_step_gib": before / memory_plan.GIB,
        "step_added_gib": (peak - before) / memory_plan.GIB,
        "estimated_gib": estimated / memory_plan.GIB,
        "estimated_per_example_gib": guess.per_example_bytes / memory_plan.GIB,
        "estimated_fixed_gib": guess.fixed_bytes / memory_plan.GIB,
        "estimate_error": estimated / peak - 1.0,
    }


def peers(args):
    chosen = []
    for name in args.configs.split(","):
        for precision in args.precisions.split(","):
            plain = f"{name}_{precision}_plain"
            for mode in ("plain", "checkpointing"):
                chosen.append(
                    harness.Peer(
                        f"{name}_{precision}_{mode}",
                        plain,
                        options={"config": name, "precision": precision, "mode": mode},
                    )
                )
    return chosen


def add_arguments(parser):
    parser.add_argument("--configs", default=",".join(CONFIG_NAMES))
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--preds", type=int, default=80, help="Masked positions per example.")
    parser.add_argument("--batch_base", type=int, default=4)
    parser.add_argument("--batch_large", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1, help="Timed steps.")
    parser.add_argument("--warmup", type=int, default=1, help="Untimed steps before them.")


METRICS = [
    harness.Metric("peak_gib", "GiB", False),
    harness.Metric("step_added_gib", "GiB", False),
    harness.seconds("step_s"),
    harness.seconds("cpu_s", "CPU s"),
    harness.Metric("estimate_error", "relative", False),
]

if __name__ == "__main__":
    harness.main(__spec__.name)
