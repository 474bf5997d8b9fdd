"""What the model benchmarks share: BERT sizes, random checkpoints, the task loss and the bare
training step, the timed `Trainer` (its TrainConfig and its timing), the fine-tuning tasks and
their records' readers, device memory and name."""

import tempfile
import time

# name: (layers, hidden size, attention heads, intermediate size); "tiny" is for dry runs of
# the accelerator check on a CPU.
_SIZES = {
    "tiny": (2, 32, 2, 64),
    "mini": (4, 256, 4, 1024),
    "small": (4, 512, 8, 2048),
    "base": (12, 768, 12, 3072),
    "large": (24, 1024, 16, 4096),
}
_FIELDS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
CONFIGS = {name: dict(zip(_FIELDS, sizes, strict=True)) for name, sizes in _SIZES.items()}
VOCAB = 30522


def bert_config(name):
    from modeling.config import BertConfig

    return BertConfig(vocab_size=VOCAB, type_vocab_size=2, **CONFIGS[name])


def random_encoder_checkpoint(work_dir, name, config, seed):
    """A random `BertModel` of `config` saved once as a TF1 checkpoint under `work_dir`
    (`encoder_<name>/model.ckpt`); returns its prefix. Speed does not depend on the weights."""
    import os

    import keras

    from modeling import tf1_checkpoint
    from modeling.bert_model import BertModel

    prefix = os.path.join(work_dir, f"encoder_{name}", "model.ckpt")
    if not os.path.exists(prefix + ".index"):
        keras.utils.set_random_seed(seed)
        model = BertModel(config)
        arrays = tf1_checkpoint.variables_to_arrays(tf1_checkpoint.build_variable_map(model))
        tf1_checkpoint.save_tf1_checkpoint(arrays, prefix)
    return prefix


def task_loss(task, features):
    """The task's training loss as the `Trainer` forms it: each term's numerator over its
    summed weights (plus the term's epsilon), added up."""
    import tensorflow as tf

    terms = task.loss_numerators(task.forward(features, training=True))
    weights = zip(terms, task.loss_weights(features), task.loss_epsilons, strict=True)
    return tf.add_n([n / (w + e) for n, w, e in weights])


def bare_train_step(task, jit, learning_rate):
    """The bare training step of `task`, the baseline of the loops: its model, loss, clipping
    to global norm 1.0 and `create_optimizer`'s update in one `tf.function`, called on a batch
    of features; returns the loss."""
    import tensorflow as tf

    from modeling.optimization import create_optimizer

    model = task.build_model()
    optimizer = create_optimizer(learning_rate, 100000, 100)
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=jit)
    def step(features):
        with tf.GradientTape() as tape:
            loss = task_loss(task, features)
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return step


def timed_train_config(**fields):
    """A `TrainConfig` for timed runs: the original optimizer, float32, no XLA, full-length
    batches, no checkpoint before the end and one progress line per compiled call (the marks
    `timed_train` times by); `fields` give the rest and override these."""
    from training.settings import TrainConfig

    settings = {
        "output_dir": tempfile.mkdtemp(prefix="bench_"),
        "learning_rate": 2e-5,
        "save_checkpoints_steps": 10**9,
        "iterations_per_loop": 1,
        "keep_checkpoint_max": 1,
        "seed": 1,
        "pad_to_max_seq_length": True,
        **fields,
    }
    settings.setdefault("log_every_steps", settings["iterations_per_loop"])
    return TrainConfig(**settings)


def timed_trainer(task, seed, strategy=None, **fields):
    """A `Trainer` of `task` (on one device unless `strategy`) with
    `timed_train_config(seed=seed, **fields)`, Keras' global seed set to `seed` first."""
    import keras

    from training.loop import Trainer
    from training.strategy import create_strategy

    keras.utils.set_random_seed(seed)
    strategy = strategy or create_strategy("one_device")
    return Trainer(task, strategy, timed_train_config(seed=seed, **fields))


# The fine-tuning tasks of the benchmarks on runner records: classes of run_classifier's
# (SST-2-like) and run_ner's (CoNLL-2003's tags) heads.
NUM_LABELS = {"classifier": 2, "ner": 9}


def fine_tuning_task(name, config):
    """run_classifier's task ("classifier") or run_ner's ("ner") of `NUM_LABELS` classes."""
    from training.tasks import ClassifierTask, NerTask

    return (NerTask if name == "ner" else ClassifierTask)(config, NUM_LABELS[name])


def records_reader(name, path, seq, batch, training, seed):
    """`(skip=0, batching=None) -> dataset` of run_classifier's ("classifier") or run_ner's
    ("ner") records at `path`, as the runner reads them."""
    from data.glue.records import classifier_dataset
    from data.ner.records import ner_dataset

    def read(skip=0, batching=None):
        if name == "ner":
            return ner_dataset(path, seq, batch, training, seed, skip, batching)
        return classifier_dataset(path, seq, False, batch, training, seed, skip, batching)

    return read


def timed_train(trainer, dataset_fn, warmup, batch, with_cpu=False, marks=None):
    """Runs `trainer.train(dataset_fn)`; examples/s after the first `warmup` steps.

    Timed by the trainer's progress lines (log every compiled call) from the end of the first
    call that reaches `warmup` steps to the end of training, so `warmup` should be a multiple of
    the trainer's steps per call. With `with_cpu`, returns (examples per second, examples per
    CPU-second of the process). `marks`, a list, receives the (step, wall, CPU) times of
    every progress line.
    """
    import logging

    from absl import logging as absl_logging

    marks = [] if marks is None else marks

    class ProgressMarks(logging.Handler):
        def emit(self, record):
            if record.msg.startswith("step %d/%d"):
                marks.append((record.args[0], time.perf_counter(), time.process_time()))

    absl_logging.set_verbosity(absl_logging.INFO)
    handler = ProgressMarks()
    logging.getLogger("absl").addHandler(handler)
    try:
        trainer.train(dataset_fn)
    finally:
        logging.getLogger("absl").removeHandler(handler)
    start_step, start_wall, start_cpu = next(m for m in marks if m[0] >= warmup)
    end_step, end_wall, end_cpu = marks[-1]
    examples = (end_step - start_step) * batch
    rate = examples / (end_wall - start_wall)
    return (rate, examples / (end_cpu - start_cpu)) if with_cpu else rate


def device_memory(reset=False):
    """Peak bytes allocated on the busiest GPU of this process (None without a GPU); with
    `reset`, starts the peaks afresh instead."""
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if not gpus:
        return None
    if reset:
        for d in gpus:
            tf.config.experimental.reset_memory_stats(d.name)
        return None
    return max(tf.config.experimental.get_memory_info(d.name)["peak"] for d in gpus)


def device_name():
    """The first GPU's name (e.g. "NVIDIA H200"), or "CPU"."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "CPU"
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
