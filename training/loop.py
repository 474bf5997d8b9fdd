"""The one train / evaluate / predict loop shared by every runner.

One optimizer update consumes one global batch (`train_batch_size` over all replicas), split
into `num_accumulation_steps` micro-batches per replica (in order of length, each cut to its
own longest sequence, where shapes may vary). Gradients of all micro-batches and replicas are
summed, divided by the loss weights of the whole global batch, clipped to global norm 1.0 as
one vector and applied once: the same update as one large batch on one device.

A task (`training.tasks`) supplies the model, its checkpoint names and its loss; see there for
the interface.
"""

import functools

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from data.records.batching import micro_batches
from fileio.errors import UserError, out_of_memory_sentence
from modeling import tf1_checkpoint
from modeling.optimization import create_optimizer
from training import inference, summaries
from training.batch_plan import plan_batches
from training.checkpointer import StopRequest, TrainingCheckpointer, export_original
from training.distributed_input import inference_batches, whole_batches
from training.precision import DynamicLossScale, check_precision
from training.strategy import is_chief


def _seed_state(model):
    """Non-trainable RNG state of dropout layers, saved so a resumed run draws the same masks."""
    # Keyed by position: Keras numbers seed generators process-wide, so paths are not stable.
    seeds = [v for v in model.non_trainable_variables if "seed_generator" in v.path]
    return {f"dropout_seed_{i}": v for i, v in enumerate(seeds)}


class Trainer:
    """Builds a task's model and optimizer under a strategy and trains, evaluates, predicts.

    Construction restores the newest checkpoint in `config.output_dir` (a resume) or else
    initialises from `config.init_checkpoint`; `step` is the step reached.

    Args:
        task: e.g. `training.tasks.PretrainingTask`.
        strategy: a `tf.distribute.Strategy`.
        config: `TrainConfig`.
    """

    def __init__(self, task, strategy, config):
        check_precision(config.precision)
        config.check(strategy.num_replicas_in_sync)
        self.task, self.strategy, self.config = task, strategy, config
        self.plan = plan_batches(strategy, task, config)
        keras.mixed_precision.set_global_policy(config.precision)
        with strategy.scope():
            self.model = task.build_model(config.gradient_checkpointing)
            self.optimizer = create_optimizer(
                config.learning_rate,
                # Runs that only evaluate or predict have no schedule; it is never read then.
                config.num_train_steps or 1,
                config.num_warmup_steps or 0,
                optimizer_type=config.optimizer,
                weight_decay_rate=config.weight_decay_rate,
                clip_norm=None,
                adam_bias_correction=config.adam_bias_correction,
            )
            # The loop all-reduces and clips the global gradient itself.
            self.optimizer.aggregate_gradients = False
            # Slots must exist before the first distributed step.
            self.optimizer.build(task.trainable_variables())
            self.loss_scale = DynamicLossScale(config.precision == "mixed_float16")
        extra = {**_seed_state(self.model), **self.loss_scale.checkpoint_state()}
        self.checkpointer = TrainingCheckpointer(
            config.output_dir,
            task.variable_map(),
            self.optimizer,
            extra,
            keep=config.keep_checkpoint_max,
            writer=is_chief(strategy),
        )
        self.step = self._restore_or_init()
        self._train_steps = self._make_train_fn()
        if is_chief(strategy):
            summaries.save_run_flags(config.output_dir, config.run_flags)

    @functools.cached_property
    def _predict_step(self):
        """One compiled inference step, shared by every evaluation and prediction set."""

        def outputs(features):
            return self.task.prediction_outputs(self.task.forward(features, training=False))

        return inference.make_predict_step(self.strategy, outputs, self.config.use_xla)

    def _restore_or_init(self):
        # An existing checkpoint always wins over --init_checkpoint: this is a resume.
        step = self.checkpointer.restore_latest()
        if step is not None:
            return step
        if self.config.init_checkpoint:
            prefix = tf1_checkpoint.resolve_checkpoint_path(self.config.init_checkpoint)
            tf1_checkpoint.assign_arrays(
                self.task.variable_map(),
                tf1_checkpoint.read_checkpoint(prefix),
                source=prefix,
                strict=False,
            )
        return 0

    # ----- one update ---------------------------------------------------------------------

    def _whole_step_compiled(self):
        # XLA: on one replica without loss scaling the whole step (forward, backward, clip,
        # update) is one compiled cluster, as a bare step would be, so the optimizer update
        # (about 7% of a step) can fuse with the backward pass. Otherwise the forward and
        # backward pass are compiled and the cross-replica sum and the update stay outside.
        cfg = self.config
        return (
            cfg.use_xla
            and self.strategy.num_replicas_in_sync == 1
            and cfg.precision != "mixed_float16"
        )

    def _replica_step(self, features, loss_and_grads):
        task, k = self.task, self.config.num_accumulation_steps
        weights = self._sum_over_replicas(task.loss_weights(features))
        denominators = [w + eps for w, eps in zip(weights, task.loss_epsilons, strict=True)]
        if k == 1:
            loss, grads = loss_and_grads(features, denominators)
        else:
            # In order of length on cut batches, each naming its real tokens (`micro_batches`).
            plan = self.plan
            part = micro_batches(
                features,
                k,
                plan.micro_batch_width,
                token_slots=plan.micro_batch_token_slots,
                per_token_features=plan.per_token_features,
            )
            loss, grads = loss_and_grads(part(0), denominators)
            for i in tf.range(1, k):
                micro_loss, micro_grads = loss_and_grads(part(i), denominators)
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
        tvars = self.task.trainable_variables()
        grads, _ = tf.clip_by_global_norm(self.loss_scale.unscale(grads), self.config.clip_norm)
        self.loss_scale.apply_if_finite(
            grads,
            lambda g: self.optimizer.apply_gradients(zip(g, tvars, strict=True)),
            self.optimizer.iterations,
        )
        return loss

    def _micro_loss_and_grads(self, features, denominators):
        """Loss of one micro-batch (over the global denominators) and its scaled gradients."""
        tvars = self.task.trainable_variables()
        with tf.GradientTape() as tape:
            aux = self.task.forward(features, training=True)
            terms = self.task.loss_numerators(aux)
            loss = tf.add_n([n / d for n, d in zip(terms, denominators, strict=True)])
            scaled = self.loss_scale.scale(loss)
        grads = tape.gradient(scaled, tvars)
        return loss, [tf.convert_to_tensor(g) for g in grads]

    def _make_train_fn(self):
        """The compiled call that runs `num_steps` updates (see `_whole_step_compiled`)."""
        if self._whole_step_compiled():
            step_fn = tf.function(
                lambda features: self._replica_step(features, self._micro_loss_and_grads),
                jit_compile=True,
            )
        else:
            loss_and_grads = self._micro_loss_and_grads
            if self.config.use_xla:
                loss_and_grads = tf.function(loss_and_grads, jit_compile=True)

            def step_fn(features):
                return self._replica_step(features, loss_and_grads)

        @tf.function(jit_compile=False)
        def train_steps(iterator, num_steps):
            loss = tf.constant(0.0)
            for _ in tf.range(num_steps):
                per_replica = self.strategy.run(step_fn, args=(next(iterator),))
                loss = self.strategy.experimental_local_results(per_replica)[0]
            return loss

        return train_steps

    # ----- training -----------------------------------------------------------------------

    def train(self, dataset_fn, evaluate=None):
        """Trains up to `num_train_steps`, resuming from `self.step`.

        Args:
            dataset_fn: `(skip_batches, batching) -> tf.data.Dataset`: the task's training
                reader for one input pipeline (`data.records.input_pipeline.Batching`), having
                skipped the global batches already trained on.
            evaluate: `step -> None`, called every `eval_every_steps` steps before the last
                (the last step's evaluation is the job's own, after training), once the
                checkpoint of that step is saved; and first thing in a run resumed at such a
                step (the run that saved it may have stopped before evaluating). Every worker
                calls it.

        Returns:
            `[(step, loss)]`: the loss of the last update of each compiled call, in order.
        """
        cfg = self.config
        if cfg.num_train_steps is None:
            raise ValueError("TrainConfig.num_train_steps is needed to train.")
        losses = []
        if self.step >= cfg.num_train_steps:
            logging.info("Already trained to step %d; nothing to do.", self.step)
            return losses
        every = cfg.eval_every_steps if evaluate else 0

        def at_eval(step):
            return every and step % every == 0 and 0 < step < cfg.num_train_steps

        start = self.step
        iterator = whole_batches(
            self.strategy,
            lambda batching: dataset_fn(start, batching),
            is_training=True,
            options=self.plan.training(),
        )
        writer = summaries.SummaryWriter(cfg.output_dir, "train", enabled=is_chief(self.strategy))
        progress = summaries.Progress(self.step, cfg.num_train_steps, cfg.train_batch_size)
        stop = StopRequest()
        logging.info("***** Running training *****")
        logging.info("  Batch size = %d", cfg.train_batch_size)
        logging.info("  Num steps = %d", cfg.num_train_steps)
        with stop:
            if at_eval(self.step):
                evaluate(self.step)
            while self.step < cfg.num_train_steps and not stop.requested:
                n = _steps_until_boundary(self.step, cfg, every)
                try:
                    loss = float(self._train_steps(iterator, tf.constant(n)))
                except tf.errors.ResourceExhaustedError as err:
                    per_replica = cfg.train_batch_size // self.strategy.num_replicas_in_sync
                    micro = per_replica // cfg.num_accumulation_steps
                    detail = f"{micro} examples per micro-batch and replica at step {self.step}"
                    raise UserError(out_of_memory_sentence(detail)) from err
                self.step += n
                losses.append((self.step, loss))
                if not np.isfinite(loss):
                    raise UserError(
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
                if self.step % cfg.save_checkpoints_steps == 0 or at_eval(self.step):
                    self.checkpointer.save(self.step)
                elif stop.requested:
                    self.checkpointer.save(self.step)
                if at_eval(self.step) and not stop.requested:
                    evaluate(self.step)
            if stop.requested:
                # The step reached has its checkpoint: saved above, or the one resumed from.
                logging.warning("Stopped by signal at step %d after saving.", self.step)
                raise SystemExit(128 + stop.signum)
        if self.step % cfg.save_checkpoints_steps:
            self.checkpointer.save(self.step)
        writer.close()
        # The Estimator's closing line, which scripts of the original read.
        logging.info("Loss for final step: %s.", np.float32(losses[-1][1]))
        return losses

    # ----- evaluation and prediction ------------------------------------------------------

    def evaluate(self, dataset_fn, max_eval_steps):
        """Runs `max_eval_steps` batches; returns metrics incl. `loss` and `global_step`.

        `dataset_fn` is `batching -> tf.data.Dataset` of whole batches (the pre-training
        evaluation set repeats).

        The task's `metric_sums` gives each metric as (weighted sum, weight) per batch; a
        metric is the ratio of the totals over all batches. `loss` is the mean of the batches'
        losses, as the Estimator's.
        """
        task = self.task

        def replica_eval(features):
            aux = task.forward(features, training=False)
            weights = self._sum_over_replicas(task.loss_weights(features))
            terms = self._sum_over_replicas(task.loss_numerators(aux))
            loss = tf.add_n(
                [n / (w + e) for n, w, e in zip(terms, weights, task.loss_epsilons, strict=True)]
            )
            sums = {k: self._sum_over_replicas(list(v)) for k, v in task.metric_sums(aux).items()}
            return loss, sums

        # One trace with the length left open serves batches cut to different lengths.
        @tf.function(reduce_retracing=True)
        def eval_step(batch):
            loss, sums = self.strategy.run(replica_eval, args=(batch,))
            first = self.strategy.experimental_local_results
            return first(loss)[0], {k: [first(x)[0] for x in v] for k, v in sums.items()}

        totals = {name: [0.0, 0.0] for name in task.metric_names}
        loss_sum, batches = 0.0, 0
        logging.info("***** Running evaluation *****")
        progress = summaries.InferenceProgress("eval", max_eval_steps, unit="batches")
        iterator = whole_batches(
            self.strategy,
            dataset_fn,
            is_training=False,
            options=self.plan.evaluation(),
        )
        for _ in range(max_eval_steps):
            try:
                batch = next(iterator)
            except StopIteration:
                break
            loss, sums = eval_step(batch)
            loss_sum += float(loss)
            batches += 1
            progress.update(1)
            for name, (value, weight) in sums.items():
                totals[name][0] += float(value)
                totals[name][1] += float(weight)
        progress.finish()
        results = {name: (v / w if w else 0.0) for name, (v, w) in totals.items()}
        results["loss"] = loss_sum / max(batches, 1)
        results["global_step"] = self.step
        return results

    def predict(self, dataset_fn, num_examples=None, unit="examples", of=None):
        """Runs the model over a finite dataset; returns the task's `prediction_outputs`.

        Args:
            dataset_fn: `batching -> tf.data.Dataset`: the task's finite reader of feature
                dicts for one input pipeline (the last batch may be short, or padded when
                `pad_to_whole_batches`; padding examples are dropped from the outputs).
            num_examples: how many rows the pass will see, for the progress lines' ETA
                (None: the lines count without one).
            unit, of: what the progress lines call the rows and what they are parts of
                (`summaries.InferenceProgress`; `jobs.fine_tuning.progress_counting`).

        Returns:
            dict name -> np.ndarray, concatenated over all examples, in order.
        """
        return inference.collect(self._predicted_batches(dataset_fn, num_examples, unit, of))

    def predict_rows(self, dataset_fn, num_examples=None, unit="examples", of=None):
        """As `predict`, streamed: one dict name -> np.ndarray per example, in input order, as
        the batches come (nothing is collected)."""
        return inference.in_input_order(self._predicted_batches(dataset_fn, num_examples, unit, of))

    def _predicted_batches(self, dataset_fn, num_examples, unit, of):
        batches = inference_batches(self.strategy, dataset_fn, self.plan.prediction())
        progress = summaries.InferenceProgress("predict", num_examples, unit=unit, of=of)
        return inference.predictions(self._predict_step, batches, progress)

    def export_original(self, output_dir, config_json):
        """Writes `bert_model.ckpt` (original names, heads included) and `bert_config.json`."""
        if is_chief(self.strategy):
            return export_original(self.task.variable_map(), output_dir, config_json)
        return None


def _steps_until_boundary(step, cfg, eval_every=0):
    """Steps to run in one compiled call: up to the next log, save, evaluation or end."""
    limits = [cfg.iterations_per_loop, cfg.num_train_steps - step]
    for every in (cfg.save_checkpoints_steps, cfg.log_every_steps, eval_every):
        if every:
            limits.append(every - step % every)
    return max(1, min(limits))
