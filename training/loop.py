"""The one train / evaluate loop shared by every runner.

One optimizer update consumes one global batch (`train_batch_size` over all replicas), split
into `num_accumulation_steps` micro-batches per replica. Gradients of all micro-batches and
replicas are summed, divided by the loss weights of the whole global batch, clipped to global
norm 1.0 as one vector and applied once: the same update as one large batch on one device.
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from modeling import checkpoint as ckpt_lib
from modeling.optimization import create_optimizer
from training import summaries
from training.checkpoints import TrainingCheckpointer
from training.stop_signals import StopRequest
from training.strategy import inference_batches, is_chief

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


@dataclasses.dataclass
class TrainConfig:
    """Everything the loop needs besides the task and the data."""

    output_dir: str
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    learning_rate: float = 5e-5
    train_batch_size: int = 32
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    log_every_steps: int = 100
    num_accumulation_steps: int = 1
    optimizer: str = "adamw"
    weight_decay_rate: float = 0.01
    clip_norm: float = 1.0
    precision: str = "float32"
    jit_compile: bool = False
    init_checkpoint: str | None = None
    keep_checkpoint_max: int = 5


def _check(config, num_replicas):
    if config.precision not in PRECISIONS:
        raise ValueError(f"--precision {config.precision!r}; use one of {list(PRECISIONS)}.")
    per_update = num_replicas * config.num_accumulation_steps
    if config.train_batch_size % per_update:
        raise ValueError(
            f"--train_batch_size={config.train_batch_size} must be divisible by the number of "
            f"replicas ({num_replicas}) times --num_accumulation_steps "
            f"({config.num_accumulation_steps})."
        )
    for name in (
        "num_train_steps",
        "save_checkpoints_steps",
        "iterations_per_loop",
        "num_accumulation_steps",
        "log_every_steps",
    ):
        if getattr(config, name) < 1:
            raise ValueError(f"--{name} must be at least 1, got {getattr(config, name)}.")


def _seed_state(model):
    """Non-trainable RNG state of dropout layers, saved so a resumed run draws the same masks."""
    # Keyed by position: Keras numbers seed generators process-wide, so paths are not stable.
    seeds = [v for v in model.non_trainable_variables if "seed_generator" in v.path]
    return {f"dropout_seed_{i}": v for i, v in enumerate(seeds)}


class Trainer:
    """Builds a task's model and optimizer under a strategy and runs training/evaluation.

    Args:
        task: e.g. `training.tasks.PretrainingTask`.
        strategy: a `tf.distribute.Strategy`.
        config: `TrainConfig`.
    """

    def __init__(self, task, strategy, config):
        _check(config, strategy.num_replicas_in_sync)
        self.task, self.strategy, self.config = task, strategy, config
        keras.mixed_precision.set_global_policy(config.precision)
        with strategy.scope():
            self.model = task.build_model()
            self.optimizer = create_optimizer(
                config.learning_rate,
                config.num_train_steps,
                config.num_warmup_steps,
                optimizer_type=config.optimizer,
                weight_decay_rate=config.weight_decay_rate,
                clip_norm=None,
            )
            # The loop all-reduces and clips the global gradient itself.
            self.optimizer.aggregate_gradients = False
            # Slots must exist before the first distributed step.
            self.optimizer.build(self.model.trainable_variables)
            self.loss_scale = tf.Variable(
                2.0**15 if config.precision == "mixed_float16" else 1.0,
                trainable=False,
                dtype=tf.float32,
            )
            self.good_steps = tf.Variable(0, trainable=False, dtype=tf.int64)
        extra = _seed_state(self.model)
        if config.precision == "mixed_float16":
            extra.update(loss_scale=self.loss_scale, loss_scale_good_steps=self.good_steps)
        self.checkpointer = TrainingCheckpointer(
            config.output_dir,
            task.variable_map(),
            self.optimizer,
            extra,
            keep=config.keep_checkpoint_max,
            writer=is_chief(strategy),
        )
        self.step = self._restore_or_init()
        # (step, loss of the last update of each compiled call), for callers and tests.
        self.loss_history = []
        # Compiled predict steps by `outputs_fn`: eval and predict sets reuse one trace.
        self._predict_fns = {}

    def _restore_or_init(self):
        latest = self.checkpointer.latest()
        if latest:
            # An existing checkpoint always wins over --init_checkpoint: this is a resume.
            return self.checkpointer.restore(latest)
        if self.config.init_checkpoint:
            prefix = ckpt_lib.resolve_checkpoint_path(self.config.init_checkpoint)
            ckpt_lib.assign_arrays(
                self.task.variable_map(),
                ckpt_lib.read_checkpoint(prefix),
                source=prefix,
                strict=False,
            )
        return 0

    # ----- one update ---------------------------------------------------------------------

    def _replica_step(self, features):
        cfg, task = self.config, self.task
        weights = self._sum_over_replicas(task.loss_weights(features))
        denominators = [w + eps for w, eps in zip(weights, task.loss_epsilons, strict=True)]
        k = cfg.num_accumulation_steps

        def micro_step(micro):
            return self._loss_and_grads(micro, denominators)

        if k == 1:
            loss, grads = micro_step(features)
        else:
            split = {
                n: tf.reshape(f, tf.concat([[k, -1], tf.shape(f)[1:]], 0))
                for n, f in features.items()
            }
            loss, grads = micro_step({n: f[0] for n, f in split.items()})
            for i in tf.range(1, k):
                micro_loss, micro_grads = micro_step({n: f[i] for n, f in split.items()})
                loss += micro_loss
                grads = [a + b for a, b in zip(grads, micro_grads, strict=True)]
        loss, *grads = self._sum_over_replicas([loss, *grads])
        return self._clip_and_apply(loss, grads)

    def _sum_over_replicas(self, values):
        # With one replica the sum is the value itself; skipping the call keeps the step
        # free of cross-replica ops, so XLA can compile all of it.
        if self.strategy.num_replicas_in_sync == 1:
            return values
        return tf.distribute.get_replica_context().all_reduce("sum", values)

    def _clip_and_apply(self, loss, grads):
        """Unscales and clips the summed gradients, then updates the variables."""
        tvars = self.model.trainable_variables
        if self.config.precision != "mixed_float16":
            grads, _ = tf.clip_by_global_norm(grads, self.config.clip_norm)
            self.optimizer.apply_gradients(zip(grads, tvars, strict=True))
            return loss
        grads = [g / self.loss_scale for g in grads]
        grads, _ = tf.clip_by_global_norm(grads, self.config.clip_norm)
        return self._apply_with_loss_scale(loss, grads, tvars)

    def _micro_loss_and_grads(self, features, denominators):
        """Loss of one micro-batch (over the global denominators) and its scaled gradients."""
        tvars = self.model.trainable_variables
        with tf.GradientTape() as tape:
            aux = self.task.forward(features, training=True)
            terms = self.task.loss_numerators(aux)
            loss = tf.add_n([n / d for n, d in zip(terms, denominators, strict=True)])
            # Only float16 scales the loss; reading the (1.0) scale variable in every step
            # costs measurable XLA time on small models.
            scaled = loss * self.loss_scale if self.config.precision == "mixed_float16" else loss
        grads = tape.gradient(scaled, tvars)
        return loss, [tf.convert_to_tensor(g) for g in grads]

    def _apply_with_loss_scale(self, loss, grads, tvars):
        """Dynamic loss scaling: skip non-finite updates and halve the scale; double it after
        2000 finite steps."""
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])

        def apply():
            self.optimizer.apply_gradients(zip(grads, tvars, strict=True))
            return tf.constant(True)

        tf.cond(finite, apply, lambda: tf.constant(False))
        good = tf.where(finite, self.good_steps + 1, 0)
        grow = good >= 2000
        self.loss_scale.assign(
            tf.where(
                finite,
                tf.where(grow, self.loss_scale * 2.0, self.loss_scale),
                tf.maximum(self.loss_scale / 2.0, 1.0),
            )
        )
        self.good_steps.assign(tf.where(grow, tf.zeros_like(good), good))
        return loss

    def _make_train_fn(self):
        @tf.function(jit_compile=False)
        def train_steps(iterator, num_steps):
            loss = tf.constant(0.0)
            for _ in tf.range(num_steps):
                per_replica = self.strategy.run(self._step_fn, args=(next(iterator),))
                loss = self.strategy.experimental_local_results(per_replica)[0]
            return loss

        return train_steps

    # ----- training -----------------------------------------------------------------------

    def train(self, dataset_fn):
        """Trains up to `num_train_steps`, resuming from `self.step`.

        Args:
            dataset_fn: `skip_batches -> tf.data.Dataset` of global batches.

        Returns:
            The final step.
        """
        cfg = self.config
        # XLA: on one replica without loss scaling the whole step (forward, backward, clip,
        # update) is one compiled cluster, as a bare step would be, so the optimizer update
        # (about 7% of a step) can fuse with the backward pass. Otherwise the forward and
        # backward pass are compiled and the cross-replica sum and the update stay outside.
        whole_step = (
            cfg.jit_compile
            and self.strategy.num_replicas_in_sync == 1
            and cfg.precision != "mixed_float16"
        )
        self._loss_and_grads = (
            tf.function(self._micro_loss_and_grads, jit_compile=True)
            if cfg.jit_compile and not whole_step
            else self._micro_loss_and_grads
        )
        self._step_fn = (
            tf.function(self._replica_step, jit_compile=True) if whole_step else self._replica_step
        )
        if self.step >= cfg.num_train_steps:
            logging.info("Already trained to step %d; nothing to do.", self.step)
            return self.step
        dataset = dataset_fn(self.step)
        iterator = iter(self.strategy.experimental_distribute_dataset(dataset))
        train_steps = self._make_train_fn()
        writer = summaries.SummaryWriter(cfg.output_dir, "train", enabled=is_chief(self.strategy))
        progress = summaries.Progress(self.step, cfg.num_train_steps, cfg.train_batch_size)
        stop = StopRequest()
        logging.info("***** Running training *****")
        logging.info("  Batch size = %d", cfg.train_batch_size)
        logging.info("  Num steps = %d", cfg.num_train_steps)
        with stop:
            while self.step < cfg.num_train_steps:
                n = _steps_until_boundary(self.step, cfg)
                loss = float(train_steps(iterator, tf.constant(n)))
                self.step += n
                self.loss_history.append((self.step, loss))
                if not np.isfinite(loss):
                    raise FloatingPointError(
                        f"Loss is {loss} at step {self.step}: training stopped. The last "
                        f"checkpoint in {cfg.output_dir} is the last good state; lower "
                        "--learning_rate or check the input data."
                    )
                lr = float(self.optimizer.learning_rate)
                if self.step % cfg.log_every_steps == 0 or self.step == cfg.num_train_steps:
                    progress.log(self.step, loss, lr)
                    writer.scalars(
                        self.step, loss=loss, learning_rate=lr, examples_per_second=progress.rate
                    )
                if self.step % cfg.save_checkpoints_steps == 0 or stop.requested:
                    self.checkpointer.save(self.step)
                if stop.requested:
                    logging.warning("Stopped by signal at step %d after saving.", self.step)
                    raise SystemExit(128 + stop.signum)
        if self.step % cfg.save_checkpoints_steps:
            self.checkpointer.save(self.step)
        writer.close()
        return self.step

    # ----- evaluation ---------------------------------------------------------------------

    def evaluate(self, dataset, max_eval_steps):
        """Runs `max_eval_steps` batches; returns metrics incl. `loss` and `global_step`."""
        task = self.task

        def replica_eval(features):
            ctx = tf.distribute.get_replica_context()
            aux = task.forward(features, training=False)
            weights = ctx.all_reduce("sum", task.loss_weights(features))
            terms = ctx.all_reduce("sum", task.loss_numerators(aux))
            loss = tf.add_n(
                [n / (w + e) for n, w, e in zip(terms, weights, task.loss_epsilons, strict=True)]
            )
            sums = {k: ctx.all_reduce("sum", list(v)) for k, v in task.metric_sums(aux).items()}
            return loss, sums

        @tf.function
        def eval_step(batch):
            loss, sums = self.strategy.run(replica_eval, args=(batch,))
            first = self.strategy.experimental_local_results
            return first(loss)[0], {k: [first(x)[0] for x in v] for k, v in sums.items()}

        totals = {name: [0.0, 0.0] for name in task.metric_names}
        loss_sum, batches = 0.0, 0
        logging.info("***** Running evaluation *****")
        iterator = inference_batches(self.strategy, dataset)
        for _ in range(max_eval_steps):
            try:
                batch = next(iterator)
            except StopIteration:
                break
            loss, sums = eval_step(batch)
            loss_sum += float(loss)
            batches += 1
            for name, (value, weight) in sums.items():
                totals[name][0] += float(value)
                totals[name][1] += float(weight)
        results = {name: (v / w if w else 0.0) for name, (v, w) in totals.items()}
        results["loss"] = loss_sum / max(batches, 1)
        results["global_step"] = self.step
        return results

    def predict(self, dataset, outputs_fn):
        """Runs inference over a finite dataset and returns per-example outputs in order.

        Args:
            dataset: a finite `tf.data.Dataset` of feature dicts (the last batch may be short).
            outputs_fn: `aux -> dict of [batch, ...] tensors`, from the task's `forward` output.

        Returns:
            dict name -> np.ndarray concatenated over all examples.
        """
        predict_step = self._predict_fns.get(outputs_fn)
        if predict_step is None:
            predict_step = self._predict_fns[outputs_fn] = self._make_predict_fn(outputs_fn)

        collected = {}
        for batch in inference_batches(self.strategy, dataset):
            for name, value in predict_step(batch).items():
                collected.setdefault(name, []).append(value.numpy())
        return {name: np.concatenate(parts) for name, parts in collected.items()}

    def _make_predict_fn(self, outputs_fn):
        def replica_predict(features):
            return outputs_fn(self.task.forward(features, training=False))

        if self.config.jit_compile:
            # One compilation per batch shape: the full batches and a short last one.
            replica_predict = tf.function(replica_predict, jit_compile=True)

        @tf.function
        def predict_step(batch):
            per_replica = self.strategy.run(replica_predict, args=(batch,))
            return {
                k: tf.concat(self.strategy.experimental_local_results(v), axis=0)
                for k, v in per_replica.items()
            }

        return predict_step

    def export_original(self, output_dir, config_json):
        """Writes `bert_model.ckpt` (original names, heads included) and `bert_config.json`."""
        if not is_chief(self.strategy):
            return None
        arrays = ckpt_lib.variables_to_arrays(self.task.variable_map())
        prefix = ckpt_lib.save_tf1_checkpoint(arrays, f"{output_dir}/bert_model.ckpt")
        config_json.to_json_file(f"{output_dir}/bert_config.json")
        logging.info("Exported %s and bert_config.json", prefix)
        return prefix


def _steps_until_boundary(step, cfg):
    """Steps to run in one compiled call: up to the next log, save or end boundary."""
    limits = [cfg.iterations_per_loop, cfg.num_train_steps - step]
    for every in (cfg.save_checkpoints_steps, cfg.log_every_steps):
        limits.append(every - step % every)
    return max(1, min(limits))
