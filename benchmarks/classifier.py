"""Fine-tuning and prediction: run_classifier's and run_ner's paths (`Trainer` on the
TFRecords the runners write) against the bare model step on one in-memory batch; see
benchmarks/README.md ("Fine-tuning and prediction").

    python -m benchmarks.classifier --config base --rounds 3
    python -m benchmarks.classifier --task ner --config base --rounds 3 --no_xla
"""

import os
import tempfile
import time

from benchmarks import harness
from benchmarks.common import bert_config, timed_train, timed_train_config
from fileio.atomic import atomic_output

NUM_LABELS = {"classifier": 2, "ner": 9}


def write_features(path, n, seq, seed=0, task="classifier"):
    """`n` random features of varying length, written as run_classifier (or run_ner) does."""
    import numpy as np

    if task == "ner":
        from data.ner.features import NO_LABEL, NerWindow
        from data.ner.records import write_ner_tfrecord

        rng = np.random.default_rng(seed)
        windows = []
        for _ in range(n):
            length = int(rng.integers(seq // 2, seq + 1))
            ids = np.zeros(seq, np.int64)
            ids[:length] = rng.integers(1000, 30522, length)
            # About 3 of 4 pieces start a word and carry a tag; [CLS] and [SEP] none.
            labels = np.full(seq, NO_LABEL, np.int64)
            tagged = rng.random(length) < 0.75
            tagged[0] = tagged[length - 1] = False
            labels[:length][tagged] = rng.integers(0, NUM_LABELS["ner"], int(tagged.sum()))
            windows.append(
                NerWindow(
                    ids.tolist(),
                    [1] * length + [0] * (seq - length),
                    [0] * seq,
                    labels.tolist(),
                    [],
                )
            )
        write_ner_tfrecord(windows, path)
        return

    from data.glue.features import ClassifierFeatures
    from data.glue.records import write_classifier_tfrecord

    rng = np.random.default_rng(seed)
    features = []
    for _ in range(n):
        length = int(rng.integers(seq // 2, seq + 1))
        first = int(rng.integers(2, length - 1))
        ids = np.zeros(seq, np.int64)
        ids[:length] = rng.integers(1000, 30522, length)
        features.append(
            ClassifierFeatures(
                ids.tolist(),
                [1] * length + [0] * (seq - length),
                [0] * first + [1] * (length - first) + [0] * (seq - length),
                int(rng.integers(0, NUM_LABELS["classifier"])),
            )
        )
    write_classifier_tfrecord(features, path, is_regression=False)


def _dataset(args, batch, is_training, skip=0, batching=None):
    from data.glue.records import classifier_dataset
    from data.ner.records import ner_dataset

    if args.task == "ner":
        return ner_dataset(args.data, args.seq, batch, is_training, args.seed, skip, batching)
    return classifier_dataset(
        args.data,
        args.seq,
        False,
        batch,
        is_training,
        seed=args.seed,
        skip_batches=skip,
        batching=batching,
    )


def _task(args, config):
    from training.tasks import ClassifierTask, NerTask

    task_class = NerTask if args.task == "ner" else ClassifierTask
    return task_class(config, NUM_LABELS[args.task])


def _bare_train_step(args, config):
    """The bare training step (model, loss, clipping, update in one `tf.function`) and the
    fixed batch it runs on."""
    import keras
    import tensorflow as tf

    from modeling.optimization import create_optimizer

    keras.utils.set_random_seed(args.seed)
    task = _task(args, config)
    model = task.build_model()
    batch = next(iter(_dataset(args, args.batch, is_training=True)))
    optimizer = create_optimizer(2e-5, 100000, 100)
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=args.xla)
    def step(features):
        with tf.GradientTape() as tape:
            aux = task.forward(features, training=True)
            (weight,) = task.loss_weights(features)
            (numerator,) = task.loss_numerators(aux)
            loss = numerator / weight
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return step, batch


def _bare_predict_step(args, config):
    """The bare forward pass with the runner's outputs in one `tf.function`, and its batch."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(args.seed)
    task = _task(args, config)
    task.build_model()
    batch = next(iter(_dataset(args, args.predict_batch, is_training=False)))

    @tf.function(jit_compile=args.xla)
    def step(features):
        # The runner's eval/predict outputs (the task's `prediction_outputs`).
        return task.prediction_outputs(task.forward(features, training=False))["predictions"]

    return step, batch


def run_bare(args, config, train):
    import tensorflow as tf

    step, batch = (_bare_train_step if train else _bare_predict_step)(args, config)
    batch_size = args.batch if train else args.predict_batch
    steps = args.steps if train else args.predict_steps
    for _ in range(args.warmup):
        step(batch)
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        out = step(batch)
    tf.nest.map_structure(lambda t: t.numpy(), out)
    examples = steps * batch_size
    return examples / (time.perf_counter() - start), examples / (time.process_time() - start_cpu)


def _trainer(args, config, num_steps):
    import keras

    from training.loop import Trainer
    from training.strategy import create_strategy

    strategy = create_strategy("one_device")
    keras.utils.set_random_seed(args.seed)
    return Trainer(
        _task(args, config),
        strategy,
        # Every batch at full length, as the bare step it is compared with.
        timed_train_config(
            num_train_steps=num_steps,
            num_warmup_steps=10,
            train_batch_size=args.batch,
            iterations_per_loop=args.iterations_per_loop,
            use_xla=args.xla,
            keep_checkpoint_max=5,
            seed=args.seed,
        ),
    )


def run_train(args, config):
    trainer = _trainer(args, config, args.warmup + args.steps)
    return timed_train(
        trainer,
        lambda skip, batching: _dataset(args, args.batch, True, skip, batching),
        args.warmup,
        args.batch,
        with_cpu=True,
    )


def run_predict(args, config):
    trainer = _trainer(args, config, 1)

    # As run_classifier: the trainer's batching (input on background threads unless the
    # strategy is one CPU replica).
    def batches(count):
        return lambda batching: _dataset(args, args.predict_batch, False, 0, batching).take(count)

    trainer.predict(batches(args.warmup))
    start, start_cpu = time.perf_counter(), time.process_time()
    outputs = trainer.predict(batches(args.predict_steps))
    examples = len(outputs["predictions"])
    return examples / (time.perf_counter() - start), examples / (time.process_time() - start_cpu)


def measure(args, peer):
    _write_records_once(args)
    config = bert_config(args.config)
    mode, args.xla = peer.options["mode"], peer.options["xla"]
    if mode in ("bare_train", "bare_predict"):
        rate, cpu_rate = run_bare(args, config, train=mode == "bare_train")
    elif mode == "train":
        rate, cpu_rate = run_train(args, config)
    else:
        rate, cpu_rate = run_predict(args, config)
    return {"examples_per_s": rate, "examples_per_cpu_s": cpu_rate}


def _write_records_once(args):
    if args.data is None:
        name = "classifier" if args.task == "classifier" else f"{args.task}_records"
        args.data = os.path.join(tempfile.gettempdir(), f"bench_{name}_{args.seq}.tf_record")
    if not os.path.exists(args.data):
        with atomic_output(args.data) as temp:
            write_features(temp, 2048, args.seq, task=args.task)


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
