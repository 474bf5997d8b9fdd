"""The pre-training loop: `bare` (the model and loss in one `tf.function` on an in-memory
batch), `loop` (`training.loop.Trainer` as run_pretraining.py runs it) and `model_garden`;
examples/s and model TFLOP/s per replica, first-call time, peak device memory. See
benchmarks/README.md ("Pre-training loop").

    python -m benchmarks.pretraining_loop --config mini --batch 32 --steps 40 --warmup 10 --rounds 2
    python -m benchmarks.pretraining_loop --config base --batch 8 --xla --only loop
"""

import os
import tempfile
import time

from benchmarks import harness
from benchmarks.common import (
    CONFIGS,
    VOCAB,
    bare_train_step,
    bert_config,
    device_memory,
    device_name,
    timed_train,
    timed_trainer,
)
from benchmarks.peer_models import make_inputs
from benchmarks.tiny_fixtures import write_examples


def train_flops_per_example(config, seq, preds):
    """Model FLOPs of one training example (forward x 3 for forward + backward)."""
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    per_token_layer = 2 * (4 * h * h + 2 * h * i)  # Q, K, V, output projections + FFN
    attention = 2 * 2 * seq * h  # scores and context, per token and layer
    encoder = seq * layers * (per_token_layer + attention)
    pooler_nsp = 2 * h * h + 2 * 2 * h
    mlm = preds * (2 * h * h + 2 * h * VOCAB)
    return 3 * (encoder + pooler_nsp + mlm)


def write_records(path, n, seq, preds, seed=0):
    """`n` random full-length pre-training examples with `preds` masked positions each
    (`peer_models.make_inputs`)."""
    features = make_inputs(n, seq, preds, VOCAB, seed)
    write_examples(path, ({k: v[i] for k, v in features.items()} for i in range(n)))


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


def run_bare(args, config):
    import keras

    from training.tasks import PretrainingTask

    keras.mixed_precision.set_global_policy(args.precision)
    step = bare_train_step(PretrainingTask(config), args.xla, 1e-4)
    batch = next(iter(_dataset_fn(args)(0, None)))
    for _ in range(args.warmup):
        float(step(batch))
    clock = harness.Clock()
    for _ in range(args.steps):
        loss = step(batch)
    float(loss)
    return args.steps * args.batch / clock.elapsed()[0]


def accumulation_steps(args, config, strategy):
    """`--accumulation`: a number, or `auto` (as run_pretraining's
    `--num_accumulation_steps=auto`: the calibrated estimate against this device's memory)."""
    if args.accumulation != "auto":
        return int(args.accumulation)
    from training import memory_plan

    device, budget = memory_plan.available_memory()
    guess = memory_plan.estimate(
        config, args.seq, args.precision, args.gradient_checkpointing, args.preds, device
    )
    steps, _ = memory_plan.plan_accumulation(
        guess, budget, args.batch, strategy.num_replicas_in_sync
    )
    return steps


def run_loop(args, config, strategy, marks):
    from training.tasks import PretrainingTask

    args.accumulation = accumulation_steps(args, config, strategy)
    trainer = timed_trainer(
        PretrainingTask(config), 1, strategy, num_train_steps=args.warmup + args.steps,
        num_warmup_steps=100, learning_rate=1e-4, train_batch_size=args.batch,
        iterations_per_loop=args.iterations_per_loop, precision=args.precision,
        use_xla=args.xla, keep_checkpoint_max=5, num_accumulation_steps=args.accumulation,
        gradient_checkpointing=args.gradient_checkpointing,
    )  # fmt: skip
    # The closing checkpoint is written after the timed window; skipping it saves seconds to
    # minutes of disk writes per run (BERT-large with its Adam slots is about 4 GB).
    trainer.checkpointer.save = lambda step: None
    return timed_train(trainer, _dataset_fn(args), args.warmup, args.batch, marks=marks)


def measure(args, peer):
    if args.data is None:
        name = f"bench_pretraining_{args.seq}_{args.preds}_{args.records}.tfrecord"
        args.data = os.path.join(tempfile.gettempdir(), name)
    harness.written_once(args.data, lambda t: write_records(t, args.records, args.seq, args.preds))
    device_memory(reset=True)
    config = bert_config(args.config)
    replicas, first_call = 1, None
    if peer.name == "bare":
        rate = run_bare(args, config)
    else:
        from training.strategy import create_strategy

        # Without GPUs (a dry run), mirrored runs on one logical CPU device.
        strategy = create_strategy(args.strategy, num_cpu_devices=1)
        replicas = strategy.num_replicas_in_sync
        start = time.perf_counter()
        if peer.name == "loop":
            marks = []
            rate = run_loop(args, config, strategy, marks)
            first_call = marks[0][1] - start if marks else None
        else:
            from benchmarks.peer_models import timed_run

            dataset_fn = _dataset_fn(args)
            rate, first_call = timed_run(config, strategy, args, lambda b: dataset_fn(0, b))
    tflops = rate * train_flops_per_example(config, args.seq, args.preds) / 1e12
    return {
        "xla": args.xla,
        "ipl": args.iterations_per_loop,
        "precision": args.precision,
        "replicas": replicas,
        "device": device_name(),
        "examples_per_s": rate,
        "examples_per_s_per_replica": rate / replicas,
        "tflops": tflops,
        "tflops_per_replica": tflops / replicas,
        "first_call_s": first_call,
        "peak_memory_bytes": device_memory(),
        "accumulation": args.accumulation,
        "gradient_checkpointing": args.gradient_checkpointing,
    }


def peers(args):
    return [
        harness.Peer("bare"),
        harness.Peer("loop", "bare"),
        # Model Garden runs on tf_keras, chosen before TensorFlow is imported.
        harness.Peer("model_garden", "bare", env={"TF_USE_LEGACY_KERAS": "1"}),
    ]


def add_arguments(parser):
    parser.add_argument(
        "--strategy",
        choices=["one_device", "mirrored"],
        default="one_device",
        help="loop and model_garden: one device, or mirrored over all local GPUs.",
    )
    parser.add_argument("--config", choices=sorted(CONFIGS), default="mini")
    parser.add_argument("--batch", type=int, default=32, help="Global batch.")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--preds", type=int, default=20, help="Masked positions per example.")
    parser.add_argument("--steps", type=int, default=30, help="Timed steps.")
    parser.add_argument("--warmup", type=int, default=5, help="Untimed steps before them.")
    parser.add_argument("--iterations_per_loop", type=int, default=10)
    parser.add_argument("--xla", action="store_true")
    parser.add_argument(
        "--accumulation", default="1", help="loop: micro-batches per update, or auto."
    )
    parser.add_argument("--gradient_checkpointing", action="store_true", help="loop only.")
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--data", default=None, help="TFRecord file (made if missing).")
    parser.add_argument("--records", type=int, default=2048, help="Examples of a new --data.")


METRICS = [harness.rate()]

if __name__ == "__main__":
    harness.main(__spec__.name)
