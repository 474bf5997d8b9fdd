"""Fine-tuning and prediction: run_classifier's and run_ner's paths (`Trainer` on the
TFRecords the runners write) against the bare model step on one in-memory batch; see
benchmarks/README.md ("Fine-tuning and prediction").

    python -m benchmarks.classifier --config base --rounds 3
    python -m benchmarks.classifier --task ner --config base --rounds 3 --no_xla
"""

import os
import tempfile

from benchmarks import harness
from benchmarks.common import (
    NUM_LABELS,
    bare_train_step,
    bert_config,
    fine_tuning_task,
    records_reader,
    timed_train,
    timed_trainer,
)


def write_features(path, n, seq, seed=0, task="classifier"):
    """`n` random features of varying length, written as run_classifier (or run_ner) does."""
    import numpy as np

    from data.glue.features import ClassifierFeatures
    from data.glue.records import write_classifier_tfrecord
    from data.ner.features import NO_LABEL, NerWindow
    from data.ner.records import write_ner_tfrecord

    rng, features = np.random.default_rng(seed), []
    for _ in range(n):
        length = int(rng.integers(seq // 2, seq + 1))
        first = None if task == "ner" else int(rng.integers(2, length - 1))
        ids = np.zeros(seq, np.int64)
        ids[:length] = rng.integers(1000, 30522, length)
        mask = [1] * length + [0] * (seq - length)
        if task == "ner":
            # About 3 of 4 pieces start a word and carry a tag; [CLS] and [SEP] none.
            labels = np.full(seq, NO_LABEL, np.int64)
            tagged = rng.random(length) < 0.75
            tagged[0] = tagged[length - 1] = False
            labels[:length][tagged] = rng.integers(0, NUM_LABELS["ner"], int(tagged.sum()))
            features.append(NerWindow(ids.tolist(), mask, [0] * seq, labels.tolist(), []))
        else:
            segments = [0] * first + [1] * (length - first) + [0] * (seq - length)
            label = int(rng.integers(0, NUM_LABELS["classifier"]))
            features.append(ClassifierFeatures(ids.tolist(), mask, segments, label))
    if task == "ner":
        write_ner_tfrecord(features, path)
    else:
        write_classifier_tfrecord(features, path, is_regression=False)


def _reader(args, batch, training):
    return records_reader(args.task, args.data, args.seq, batch, training, args.seed)


def run_bare(args, config, train):
    """The bare training step (`bare_train_step`) or forward pass with the runner's outputs
    in one `tf.function`, on one fixed batch."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(args.seed)
    task = fine_tuning_task(args.task, config)
    if train:
        batch_size, steps, step = args.batch, args.steps, bare_train_step(task, args.xla, 2e-5)
    else:
        task.build_model()
        batch_size, steps = args.predict_batch, args.predict_steps

        @tf.function(jit_compile=args.xla)
        def step(features):
            # The runner's eval/predict outputs (the task's `prediction_outputs`).
            return task.prediction_outputs(task.forward(features, training=False))["predictions"]

    batch = next(iter(_reader(args, batch_size, train)()))
    for _ in range(args.warmup):
        step(batch)
    clock = harness.Clock()
    for _ in range(steps):
        out = step(batch)
    tf.nest.map_structure(lambda t: t.numpy(), out)
    return clock.rates(steps * batch_size)


def _trainer(args, config, num_steps):
    # Every batch at full length, as the bare step it is compared with.
    return timed_trainer(
        fine_tuning_task(args.task, config), args.seed, num_train_steps=num_steps,
        num_warmup_steps=10, train_batch_size=args.batch, use_xla=args.xla,
        iterations_per_loop=args.iterations_per_loop, keep_checkpoint_max=5,
    )  # fmt: skip


def run_train(args, config):
    trainer = _trainer(args, config, args.warmup + args.steps)
    read = _reader(args, args.batch, True)
    rates = timed_train(trainer, read, args.warmup, args.batch, with_cpu=True)
    return dict(zip(("examples_per_s", "examples_per_cpu_s"), rates, strict=True))


def run_predict(args, config):
    trainer = _trainer(args, config, 1)
    read = _reader(args, args.predict_batch, False)
    # As run_classifier: the trainer's batching (input on background threads unless the
    # strategy is one CPU replica).
    trainer.predict(lambda batching: read(0, batching).take(args.warmup))
    clock = harness.Clock()
    outputs = trainer.predict(lambda batching: read(0, batching).take(args.predict_steps))
    return clock.rates(len(outputs["predictions"]))


def measure(args, peer):
    _write_records_once(args)
    config = bert_config(args.config)
    mode, args.xla = peer.options["mode"], peer.options["xla"]
    if mode.startswith("bare_"):
        return run_bare(args, config, train=mode == "bare_train")
    return (run_train if mode == "train" else run_predict)(args, config)


def _write_records_once(args):
    if args.data is None:
        name = "classifier" if args.task == "classifier" else f"{args.task}_records"
        args.data = os.path.join(tempfile.gettempdir(), f"bench_{name}_{args.seq}.tf_record")
    harness.written_once(
        args.data, lambda temp: write_features(temp, 2048, args.seq, task=args.task)
    )


def peers(args):
    chosen = []
    for xla in (False, True) if not args.no_xla else (False,):
        suffix = "_xla" if xla else ""
        for phase in ("train", "predict"):
            bare = f"bare_{phase}{suffix}"
            chosen.append(harness.Peer(bare, bare, options={"mode": f"bare_{phase}", "xla": xla}))
            chosen.append(harness.Peer(phase + suffix, bare, options={"mode": phase, "xla": xla}))
    return chosen


def add_arguments(parser):
    parser.add_argument("--task", choices=["classifier", "ner"], default="classifier")
    parser.add_argument("--config", choices=["tiny", "mini", "base", "large"], default="mini")
    parser.add_argument("--batch", type=int, default=32, help="Training batch (original: 32).")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5, help="A multiple of iterations_per_loop.")
    parser.add_argument("--predict_batch", type=int, default=8, help="Original default: 8.")
    parser.add_argument("--predict_steps", type=int, default=40)
    parser.add_argument("--iterations_per_loop", type=int, default=5)
    parser.add_argument("--no_xla", action="store_true", help="Leave out the XLA peers.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default=None, help="Classifier TFRecord file (made if missing).")


METRICS = [harness.rate(), harness.rate("examples_per_cpu_s", "examples/CPU-s")]

if __name__ == "__main__":
    harness.main(__spec__.name)
