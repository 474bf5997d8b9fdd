"""Model Garden's pre-training step as `benchmarks.pretraining_loop`'s `model_garden` peer
runs it: its `BertPretrainerV2` on tf_keras, the same TFRecords, input pipeline, precision,
strategy, clipping and optimizer settings as ours, timed the same way.
"""

import time

INIT_LR, TRAIN_STEPS, WARMUP_STEPS = 1e-4, 100000, 100


def _build(config, strategy, precision, features):
    """The pretrainer and its optimizer, built under `strategy` on one batch `features`."""
    import tensorflow as tf
    import tf_keras
    from official.nlp import optimization

    from benchmarks.peer_models import model_garden_pretrainer

    tf_keras.mixed_precision.set_global_policy(precision)
    with strategy.scope():
        _, pretrainer = model_garden_pretrainer(config)
        # Variables are made here, eagerly: a mirrored strategy cannot create them per replica
        # inside the compiled step.
        pretrainer(_inputs(features), training=False)
        optimizer = optimization.create_optimizer(INIT_LR, TRAIN_STEPS, WARMUP_STEPS)
        if precision == "mixed_float16":
            optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
    # The NSP head has its own pooling dense, so the encoder's pooler gets no gradient; it is
    # left out of the step as in Model Garden's own training.
    probe = {k: v[:1] for k, v in features.items()}
    with tf.GradientTape() as tape:
        loss = _loss(pretrainer(_inputs(probe), training=True), probe, 1)
    grads = tape.gradient(loss, pretrainer.trainable_variables)
    tvars = [v for g, v in zip(grads, pretrainer.trainable_variables, strict=True) if g is not None]
    return pretrainer, optimizer, tvars


def _inputs(features):
    return {
        "input_word_ids": features["input_ids"],
        "input_mask": features["input_mask"],
        "input_type_ids": features["segment_ids"],
        "masked_lm_positions": features["masked_lm_positions"],
    }


def _loss(outputs, features, num_replicas):
    """Weighted masked-LM cross-entropy + NSP cross-entropy, this replica's share."""
    import tensorflow as tf
    import tf_keras

    sparse_ce = tf_keras.losses.sparse_categorical_crossentropy
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    nll = sparse_ce(
        features["masked_lm_ids"], tf.cast(outputs["mlm_logits"], tf.float32), from_logits=True
    )
    mlm = tf.reduce_sum(weights * nll) / (tf.reduce_sum(weights) + 1e-5)
    labels = tf.reshape(features["next_sentence_labels"], [-1])
    nsp = tf.reduce_mean(
        sparse_ce(labels, tf.cast(outputs["next_sentence"], tf.float32), from_logits=True)
    )
    # Each replica's loss is its share of the global mean, so the summed gradients are the
    # gradient of the global batch.
    return (mlm + nsp) / num_replicas


def make_train_steps(config, strategy, precision, use_xla, features):
    """Builds the pretrainer and returns `train_steps(iterator, num_steps) -> loss`.

    Args:
        config: a `BertConfig` (sizes and dropout).
        strategy: a `tf.distribute.Strategy`.
        precision: "float32", "mixed_float16" or "mixed_bfloat16".
        use_xla: compile as the `Trainer` does with `--use_xla`.
        features: one per-replica batch of the pretraining features (builds the variables).
    """
    import tensorflow as tf

    pretrainer, optimizer, tvars = _build(config, strategy, precision, features)
    replicas = strategy.num_replicas_in_sync
    float16 = precision == "mixed_float16"

    def loss_and_grads(batch):
        with tf.GradientTape() as tape:
            loss = _loss(pretrainer(_inputs(batch), training=True), batch, replicas)
            scaled = optimizer.get_scaled_loss(loss) if float16 else loss
        grads = tape.gradient(scaled, tvars)
        return loss, grads

    def apply(loss, grads):
        if float16:
            grads = optimizer.get_unscaled_gradients(grads)
        # Model Garden's recipe: apply_gradients clips, all-reduces and updates.
        optimizer.apply_gradients(zip(grads, tvars, strict=True))
        return loss

    if use_xla and replicas == 1 and not float16:
        step_fn = tf.function(lambda batch: apply(*loss_and_grads(batch)), jit_compile=True)
    else:
        compiled = tf.function(loss_and_grads, jit_compile=True) if use_xla else loss_and_grads

        def step_fn(batch):
            return apply(*compiled(batch))

    @tf.function(jit_compile=False)
    def train_steps(iterator, num_steps):
        loss = tf.constant(0.0)
        for _ in tf.range(num_steps):
            per_replica = strategy.run(step_fn, args=(next(iterator),))
            loss = strategy.experimental_local_results(per_replica)[0]
        return loss

    return train_steps


def timed_run(config, strategy, args, dataset_fn):
    """Trains `args.warmup + args.steps` steps; returns (global examples/s, first call s).

    Timed from the end of the call that completes `args.warmup` steps to the end of the last,
    `args.iterations_per_loop` steps per call (the first call traces and compiles).
    """
    import tensorflow as tf

    from training.distributed_input import whole_batches

    iterator = whole_batches(strategy, dataset_fn, is_training=True)
    first = next(iter(dataset_fn(None)))
    per_replica = {k: v[: args.batch // strategy.num_replicas_in_sync] for k, v in first.items()}
    start = time.perf_counter()
    train_steps = make_train_steps(config, strategy, args.precision, args.xla, per_replica)
    per_call = tf.constant(args.iterations_per_loop)
    done, timed_from, first_call = 0, None, None
    while done < args.warmup + args.steps:
        loss = float(train_steps(iterator, per_call))
        done += args.iterations_per_loop
        if first_call is None:
            first_call = time.perf_counter() - start
        if done >= args.warmup and timed_from is None:
            timed_from, timed_step = time.perf_counter(), done
    if not tf.math.is_finite(loss):
        raise FloatingPointError(f"Model Garden's loss is {loss}.")
    rate = (done - timed_step) * args.batch / (time.perf_counter() - timed_from)
    return rate, first_call
