"""Throughput of the whole pre-training loop against the bare model step at the same config.

Three modes, each run in a process of its own (`--driver` runs the first two):

* `bare`: `PretrainingTask` model, loss and `create_optimizer` in a plain `tf.function` step on
  one fixed in-memory batch: no input pipeline, no strategy, no logging, no checkpoints.
* `loop`: `training.loop.Trainer` exactly as run_pretraining uses it, reading TFRecords through
  `data.records.input_pipeline.pretraining_dataset` (parsing, shuffling, batching), with
  `--iterations_per_loop` steps per compiled call and progress logging every call.
* `model_garden`: the peer, Model Garden's `BertPretrainer` step at the same settings
  (`model_garden_pretraining.py`).

`--strategy mirrored` runs `loop` and `model_garden` over all local GPUs (one logical CPU device
without GPUs); the JSON line then also gives examples/s and TFLOP/s per replica, and the peak
device memory of the process (the largest over its GPUs).

Examples per second are measured after `--warmup` steps (the first call compiles). The driver
interleaves the variants over `--rounds` rounds and prints each variant's median and its ratio
to the bare step's median.

    python benchmarks/bench_pretraining_loop.py --driver --config mini --batch 32 --rounds 3
    python benchmarks/bench_pretraining_loop.py --mode loop --config base --batch 8 --xla

On a GPU machine `benchmarks/accelerator_check.sh` runs this script's `loop` and `model_garden`
modes over the BERT-base / BERT-large, phase-1 / phase-2, precision and XLA matrix and prints
sequences/s per GPU and model-FLOPs utilisation.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Re-exported: the other benchmarks import these from here.
from bench_common import (  # noqa: E402, F401  (benchmarks/ is on sys.path)
    CONFIGS,
    VOCAB,
    bert_config,
    device_memory,
    device_name,
    timed_train,
    timed_train_config,
)


def train_flops_per_example(config, seq, preds):
    """Model FLOPs of one training example (forward x 3 for forward + backward)."""
    h, i, layers = (
        config.hidden_size,
        config.intermediate_size,
        config.num_hidden_layers,
    )
    per_token_layer = 2 * (4 * h * h + 2 * h * i)  # Q, K, V, output projections + FFN
    attention = 2 * 2 * seq * h  # scores and context, per token and layer
    encoder = seq * layers * (per_token_layer + attention)
    pooler_nsp = 2 * h * h + 2 * 2 * h
    mlm = preds * (2 * h * h + 2 * h * VOCAB)
    return 3 * (encoder + pooler_nsp + mlm)


def write_records(path, n, seq, preds, seed=0):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(n):
            positions = np.sort(rng.choice(np.arange(1, seq), preds, replace=False))
            feature = {
                "input_ids": ints(rng.integers(1000, VOCAB, seq)),
                "input_mask": ints([1] * seq),
                "segment_ids": ints([0] * (seq // 2) + [1] * (seq - seq // 2)),
                "masked_lm_positions": ints(positions),
                "masked_lm_ids": ints(rng.integers(1000, VOCAB, preds)),
                "masked_lm_weights": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[1.0] * preds)
                ),
                "next_sentence_labels": ints([int(rng.integers(0, 2))]),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )


def run_bare(args, config):
    import keras
    import tensorflow as tf

    from data.records import input_pipeline
    from modeling.optimization import create_optimizer
    from training.tasks import PretrainingTask

    keras.mixed_precision.set_global_policy(args.precision)
    task = PretrainingTask(config)
    model = task.build_model()
    optimizer = create_optimizer(1e-4, 100000, 100)
    optimizer.build(model.trainable_variables)
    batch = next(
        iter(
            input_pipeline.pretraining_dataset(
                [args.data], args.seq, args.preds, args.batch, is_training=True, seed=1
            )
        )
    )

    @tf.function(jit_compile=args.xla)
    def step(features):
        with tf.GradientTape() as tape:
            aux = task.forward(features, training=True)
            weights = task.loss_weights(features)
            terms = task.loss_numerators(aux)
            loss = tf.add_n(
                [n / (w + e) for n, w, e in zip(terms, weights, task.loss_epsilons, strict=True)]
            )
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    for _ in range(args.warmup):
        float(step(batch))
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step(batch)
    float(loss)
    return args.steps * args.batch / (time.perf_counter() - start)


def _dataset_fn(args):
    from data.records import input_pipeline

    return lambda skip, batching: input_pipeline.pretraining_dataset(
        [args.data],
        args.seq,
        args.preds,
        args.batch,
        is_training=True,
        seed=1,
        skip_batches=skip,
        batching=batching,
    )


def run_loop(args, config, strategy, marks):
    import keras

    from training.loop import Trainer
    from training.tasks import PretrainingTask

    keras.utils.set_random_seed(1)
    total = args.warmup + args.steps
    out = tempfile.mkdtemp(prefix="bench_loop_")
    trainer = Trainer(
        PretrainingTask(config),
        strategy,
        timed_train_config(
            output_dir=out,
            num_train_steps=total,
            num_warmup_steps=100,
            learning_rate=1e-4,
            train_batch_size=args.batch,
            iterations_per_loop=args.iterations_per_loop,
            precision=args.precision,
            use_xla=args.xla,
            keep_checkpoint_max=5,
        ),
    )
    # The closing checkpoint is written after the timed window; skipping it saves seconds to
    # minutes of disk writes per run (BERT-large with its Adam slots is about 4 GB).
    trainer.checkpointer.save = lambda step: None
    return timed_train(trainer, _dataset_fn(args), args.warmup, args.batch, marks=marks)


def run_model_garden(args, config, strategy):
    """Model Garden's step; returns (examples/s, first call s)."""
    from model_garden_pretraining import timed_run

    dataset_fn = _dataset_fn(args)
    return timed_run(config, strategy, args, lambda batching: dataset_fn(0, batching))


def measure_row(args):
    """Runs one `--mode` measurement; returns its results as a dict (see `measure`)."""
    import time

    device_memory(reset=True)
    config = bert_config(args.config)
    replicas, first_call = 1, None
    if args.mode == "bare":
        rate = run_bare(args, config)
    else:
        from training.strategy import create_strategy

        # Without GPUs (a dry run), mirrored runs on one logical CPU device.
        strategy = create_strategy(args.strategy, num_cpu_devices=1)
        replicas = strategy.num_replicas_in_sync
        start = time.perf_counter()
        if args.mode == "loop":
            marks = []
            rate = run_loop(args, config, strategy, marks)
            first_call = marks[0][1] - start if marks else None
        else:
            rate, first_call = run_model_garden(args, config, strategy)
    flops = train_flops_per_example(config, args.seq, args.preds)
    return {
        "mode": args.mode,
        "xla": args.xla,
        "ipl": args.iterations_per_loop,
        "precision": args.precision,
        "replicas": replicas,
        "device": device_name(),
        "examples_per_s": rate,
        "examples_per_s_per_replica": rate / replicas,
        "tflops": rate * flops / 1e12,
        "tflops_per_replica": rate * flops / 1e12 / replicas,
        "first_call_s": first_call,
        "peak_memory_bytes": device_memory(),
    }


def measure(args):
    """Prints one JSON line: examples/s and model TFLOP/s (in all and per replica), the time
    of the first compiled call, and the peak device memory."""
    print(json.dumps(measure_row(args)))


VARIANTS = [
    ("bare", ["--mode", "bare"]),
    ("loop", ["--mode", "loop"]),
    ("loop ipl=1", ["--mode", "loop", "--iterations_per_loop", "1"]),
    ("bare xla", ["--mode", "bare", "--xla"]),
    ("loop xla", ["--mode", "loop", "--xla"]),
]


def drive(args):
    common = [
        "--config",
        args.config,
        "--batch",
        str(args.batch),
        "--seq",
        str(args.seq),
        "--preds",
        str(args.preds),
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--data",
        args.data,
        "--precision",
        args.precision,
    ]
    rates = {name: [] for name, _ in VARIANTS}
    for round_index in range(args.rounds):
        for name, extra in VARIANTS:
            cmd = [sys.executable, os.path.abspath(__file__), *common, *extra]
            if "--iterations_per_loop" not in extra:
                cmd += ["--iterations_per_loop", str(args.iterations_per_loop)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            rate = json.loads(out.strip().splitlines()[-1])["examples_per_s"]
            rates[name].append(rate)
            print(f"round {round_index + 1} {name}: {rate:.2f} examples/s", flush=True)
    base = statistics.median(rates["bare"])
    print(f"\n{'variant':<12} {'median ex/s':>12} {'vs bare':>8}")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"{name:<12} {median:>12.2f} {median / base:>8.3f}")


def build_parser():
    """The command-line flags; `accelerator_check.py` builds each of its rows from them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", action="store_true", help="Run all variants interleaved.")
    parser.add_argument("--mode", choices=["bare", "loop", "model_garden"], default="loop")
    parser.add_argument(
        "--strategy",
        choices=["one_device", "mirrored"],
        default="one_device",
        help="loop and model_garden: one device, or mirrored over all local GPUs.",
    )
    parser.add_argument("--config", choices=sorted(CONFIGS), default="mini")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--preds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations_per_loop", type=int, default=10)
    parser.add_argument("--xla", action="store_true")
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", default=None, help="TFRecord file (made if missing).")
    return parser


def main():
    args = build_parser().parse_args()
    if args.mode == "model_garden":
        # Model Garden runs on tf_keras; this must be set before TensorFlow is imported.
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    if args.data is None:
        args.data = os.path.join(
            tempfile.gettempdir(), f"bench_pretraining_{args.seq}_{args.preds}.tfrecord"
        )
    if not os.path.exists(args.data):
        write_records(args.data + ".tmp", 2048, args.seq, args.preds)
        os.replace(args.data + ".tmp", args.data)
    drive(args) if args.driver else measure(args)


if __name__ == "__main__":
    main()
