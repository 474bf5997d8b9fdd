"""The Trainer against the bare step in one process (`bench_classifier.py --mode ab_train` /
`--mode ab_predict`): the two alternate in chunks, so both see the same machine state."""

import json
import statistics
import time

import bench_classifier as bc
from bench_common import timed_train


def run_ab_train(args, config):
    """The bare step and the Trainer in one process, alternating over `--rounds` chunks of
    `--steps` steps each, so that both see the same machine state. In each chunk the steps
    after the first compiled call (`--iterations_per_loop` steps) are timed; the Trainer's
    per-chunk dataset set-up and checkpoint are outside the timed span.

    Prints one JSON line per chunk and returns the per-chunk
    (bare ex/s, Trainer ex/s, bare ex/CPU-s, Trainer ex/CPU-s).
    """
    step, batch = bc._bare_train_step(args, config)
    trainer = bc._trainer(args, config, 10**6)
    trainer.checkpointer.save = lambda step: None
    timed = (args.steps - args.iterations_per_loop) * args.batch
    results = []
    for _ in range(args.rounds):
        for i in range(args.steps):
            if i == args.iterations_per_loop:
                start, start_cpu = time.perf_counter(), time.process_time()
            loss = step(batch)
        loss.numpy()
        bare = timed / (time.perf_counter() - start), timed / (time.process_time() - start_cpu)
        first = trainer.step
        trainer.config.num_train_steps = first + args.steps
        rate, cpu_rate = timed_train(
            trainer,
            lambda skip, batching: bc._dataset(args, args.batch, True, skip, batching),
            first + args.iterations_per_loop,
            args.batch,
            with_cpu=True,
        )
        results.append((bare[0], rate, bare[1], cpu_rate))
        print(json.dumps({"bare": bare, "trainer": (rate, cpu_rate)}), flush=True)
    return results


def run_ab_predict(args, config):
    """The bare forward pass and `Trainer.predict` in one process, alternating over
    `--rounds` chunks of `--predict_steps` batches each (after one warm-up pass of each).

    Returns the per-chunk (bare ex/s, Trainer ex/s, bare ex/CPU-s, Trainer ex/CPU-s).
    """
    step, batch = bc._bare_predict_step(args, config)
    trainer = bc._trainer(args, config, 1)

    def batches(count):
        return lambda batching: bc._dataset(args, args.predict_batch, False, 0, batching).take(
            count
        )

    for _ in range(args.warmup):
        step(batch).numpy()
    trainer.predict(batches(args.warmup))
    examples = args.predict_steps * args.predict_batch
    results = []
    for _ in range(args.rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(args.predict_steps):
            out = step(batch)
        out.numpy()
        bare = (
            examples / (time.perf_counter() - start),
            examples / (time.process_time() - start_cpu),
        )
        start, start_cpu = time.perf_counter(), time.process_time()
        count = len(trainer.predict(batches(args.predict_steps))["predictions"])
        ours = count / (time.perf_counter() - start), count / (time.process_time() - start_cpu)
        results.append((bare[0], ours[0], bare[1], ours[1]))
        print(json.dumps({"bare": bare, "trainer": ours}), flush=True)
    return results


def report_ab(results):
    """Per-chunk Trainer/bare ratios and the ratio of medians, wall and CPU time."""
    bare, trainer, bare_cpu, trainer_cpu = (list(column) for column in zip(*results, strict=True))
    for i, row in enumerate(results):
        print(
            f"chunk {i + 1}: bare {row[0]:.2f} ex/s, Trainer {row[1]:.2f} ({row[1] / row[0]:.3f}); "
            f"CPU {row[2]:.2f} vs {row[3]:.2f} ({row[3] / row[2]:.3f})"
        )
    med = statistics.median
    print(
        f"median: bare {med(bare):.2f} ex/s, Trainer {med(trainer):.2f} "
        f"({med(trainer) / med(bare):.3f}); per-CPU-s {med(bare_cpu):.2f} vs "
        f"{med(trainer_cpu):.2f} ({med(trainer_cpu) / med(bare_cpu):.3f}); "
        f"median of chunk ratios {med(t / b for b, t in zip(bare, trainer, strict=True)):.3f}"
    )
