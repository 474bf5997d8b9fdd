"""The peers' models: this project's, keras-hub's and Model Garden's BERT pre-training step or
encoder call on one random batch (`benchmarks.train_step`, `benchmarks.profile_step`), and
Model Garden's pre-training step as `benchmarks.pretraining_loop`'s `model_garden` peer runs
it (`timed_run`).
"""

import time

import numpy as np

# Learning-rate schedule of the step; its values do not change the work done.
INIT_LR, TRAIN_STEPS, WARMUP_STEPS = 1e-4, 10000, 100


def make_inputs(batch, seq_length, predictions, vocab_size, seed=0):
    """Random pretraining features with the original TFRecord keys, no padding: `batch`
    sequences of `seq_length` ids in [1000, `vocab_size`), the second half segment 1, and
    `predictions` distinct masked positions in [1, `seq_length`) per sequence, all weight 1."""
    rng = np.random.default_rng(seed)
    segment_ids = np.zeros((batch, seq_length), np.int32)
    segment_ids[:, seq_length // 2 :] = 1
    positions = [
        np.sort(rng.choice(np.arange(1, seq_length), predictions, replace=False))
        for _ in range(batch)
    ]
    return {
        "input_ids": rng.integers(1000, vocab_size, (batch, seq_length)).astype(np.int32),
        "input_mask": np.ones((batch, seq_length), np.int32),
        "segment_ids": segment_ids,
        "masked_lm_positions": np.stack(positions).astype(np.int32),
        "masked_lm_ids": rng.integers(1000, vocab_size, (batch, predictions)).astype(np.int32),
        "masked_lm_weights": np.ones((batch, predictions), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (batch,)).astype(np.int32),
    }


def build_step(peer, config, mode, features):
    """The compiled step of `peer` ("ours", "keras_hub", "model_garden", each with an optional
    "_xla" suffix for `jit_compile=True`) for a `modeling.BertConfig`, in `mode` "train" or
    "infer", on `features` from `make_inputs`; calling it runs one step and waits for it, and
    returns the loss (train) or the encoder's outputs (infer)."""
    builders = {"ours": _ours, "keras_hub": _keras_hub, "model_garden": _model_garden}
    step = builders[peer.removesuffix("_xla")](config, mode, peer.endswith("_xla"), features)

    def call():
        # Reading a result back waits for the whole step; the outputs are small.
        result = step()
        (result[1] if isinstance(result, tuple) else result).numpy()
        return result

    return call


def _infer(tf, jit, encoder, inputs):
    """The encoder's forward pass, `training=False`, as a compiled function."""

    @tf.function(jit_compile=jit)
    def infer():
        out = encoder(inputs, training=False)
        return out["sequence_output"], out["pooled_output"]

    return infer


def _train(tf, jit, loss_fn, variables_fn, optimizer):
    """Gradient of `loss_fn()` and the update of `variables_fn()`, as a compiled function."""

    @tf.function(jit_compile=jit)
    def train_step():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        # Read after the forward pass, which builds Model Garden's variables on the first trace.
        variables = variables_fn()
        grads = tape.gradient(loss, variables)
        # Model Garden's NSP head has its own pooling dense, so its pooler gets no gradient.
        pairs = [(g, v) for g, v in zip(grads, variables, strict=True) if g is not None]
        optimizer.apply_gradients(pairs)
        return loss

    return train_step


def _pretraining_loss(tf, cross_entropy, mlm_logits, nsp_logits, x):
    """The peers' own heads' loss: sum(w * nll) / (sum(w) + 1e-5) over the masked positions'
    `[B, P, V]` logits, plus the mean next-sentence cross-entropy."""
    weights = tf.cast(x["masked_lm_weights"], tf.float32)
    nll = cross_entropy(x["masked_lm_ids"], tf.cast(mlm_logits, tf.float32), from_logits=True)
    labels = tf.reshape(x["next_sentence_labels"], [-1])
    nsp = cross_entropy(labels, tf.cast(nsp_logits, tf.float32), from_logits=True)
    return tf.reduce_sum(weights * nll) / (tf.reduce_sum(weights) + 1e-5) + tf.reduce_mean(nsp)


def _ours(config, mode, jit, features):
    """This project's BertPretrainer and loss (train) or BertModel (infer)."""
    import tensorflow as tf

    from benchmarks.common import task_loss
    from modeling import BertModel
    from modeling.optimization import create_optimizer
    from training.tasks import PretrainingTask

    x = {k: tf.constant(v) for k, v in features.items()}
    if mode == "infer":
        inputs = {k: x[k] for k in ("input_ids", "input_mask", "segment_ids")}
        return _infer(tf, jit, BertModel(config), inputs)

    # The product's model and loss (training/tasks.py), without the loop around them.
    task = PretrainingTask(config)
    model = task.build_model()
    optimizer = create_optimizer(INIT_LR, TRAIN_STEPS, WARMUP_STEPS)
    loss = lambda: task_loss(task, x)  # noqa: E731
    return _train(tf, jit, loss, lambda: model.trainable_variables, optimizer)


def _keras_hub(config, mode, jit, features):
    """keras-hub's BertBackbone with BertMaskedLM's head and a Dense(2) NSP head."""
    import keras
    import keras_hub
    import tensorflow as tf

    from modeling.formats.keras_hub import keras_hub_backbone

    backbone = keras_hub_backbone(config)
    x = {k: tf.constant(v) for k, v in features.items()}
    inputs = {
        "token_ids": x["input_ids"],
        "segment_ids": x["segment_ids"],
        "padding_mask": x["input_mask"],
    }
    if mode == "infer":
        return _infer(tf, jit, backbone, inputs)

    init = keras.initializers.TruncatedNormal(stddev=config.initializer_range)
    # The head BertMaskedLM builds, on the backbone's tied token embedding.
    mlm_head = keras_hub.layers.MaskedLMHead(
        vocabulary_size=config.vocab_size,
        token_embedding=backbone.token_embedding,
        intermediate_activation="gelu",
        kernel_initializer=init,
        name="mlm_head",
    )
    nsp_head = keras.layers.Dense(2, kernel_initializer=init, name="nsp_head")
    optimizer = keras.optimizers.AdamW(
        learning_rate=keras.optimizers.schedules.PolynomialDecay(INIT_LR, TRAIN_STEPS, 0.0),
        weight_decay=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=1.0,
    )
    optimizer.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
    cross_entropy = keras.losses.sparse_categorical_crossentropy

    def step_loss():
        out = backbone(inputs, training=True)
        logits = mlm_head(out["sequence_output"], x["masked_lm_positions"])
        return _pretraining_loss(tf, cross_entropy, logits, nsp_head(out["pooled_output"]), x)

    step_loss()  # Builds both heads before the variable list is taken.
    variables = (
        backbone.trainable_variables + mlm_head.trainable_variables + nsp_head.trainable_variables
    )
    # Deduplicate the tied embedding, which the head also tracks.
    variables = list({id(v): v for v in variables}.values())
    optimizer.build(variables)
    return _train(tf, jit, step_loss, lambda: variables, optimizer)


def model_garden_pretrainer(config):
    """Model Garden's BertEncoder + BertPretrainerV2 with a `next_sentence` head (tf_keras).

    The heads are those of Model Garden's BERT pretraining task (MaskedLM on the tied word
    embeddings, `ClassificationHead` for next-sentence prediction), the activations its tanh
    GELU, as this project's `hidden_act="gelu"`.

    Args:
        config: A `modeling.BertConfig`; its sizes, dropout rates, position and segment table
            sizes and initializer range are used.

    Returns:
        `(encoder, pretrainer)`: the `networks.BertEncoder` (dict outputs) and the
        `models.BertPretrainerV2` on it, not yet built.
    """
    import tf_keras
    from official.nlp.modeling import layers, models, networks

    def gelu(v):
        return tf_keras.activations.gelu(v, approximate=True)

    init = tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range)
    encoder = networks.BertEncoder(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        max_sequence_length=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        inner_dim=config.intermediate_size,
        inner_activation=gelu,
        output_dropout=config.hidden_dropout_prob,
        attention_dropout=config.attention_probs_dropout_prob,
        initializer=init,
        dict_outputs=True,
    )
    next_sentence = layers.ClassificationHead(
        inner_dim=config.hidden_size,
        num_classes=2,
        dropout_rate=config.hidden_dropout_prob,
        initializer=init,
        name="next_sentence",
    )
    pretrainer = models.BertPretrainerV2(
        encoder_network=encoder,
        mlm_activation=gelu,
        mlm_initializer=init,
        classification_heads=[next_sentence],
    )
    return encoder, pretrainer


def _model_garden_inputs(features):
    return {
        "input_word_ids": features["input_ids"],
        "input_mask": features["input_mask"],
        "input_type_ids": features["segment_ids"],
        "masked_lm_positions": features["masked_lm_positions"],
    }


def _model_garden_loss(outputs, features, num_replicas=1):
    """The pretrainer's loss, this replica's share: each replica's loss is its share of the
    global mean, so the summed gradients are the gradient of the global batch."""
    import tensorflow as tf
    import tf_keras

    cross_entropy = tf_keras.losses.sparse_categorical_crossentropy
    logits = outputs["mlm_logits"], outputs["next_sentence"]
    return _pretraining_loss(tf, cross_entropy, *logits, features) / num_replicas


def _model_garden(config, mode, jit, features):
    """Model Garden's pretrainer with its own optimizer (tf_keras)."""
    import tensorflow as tf
    from official.nlp import optimization

    encoder, pretrainer = model_garden_pretrainer(config)
    x = {k: tf.constant(v) for k, v in features.items()}
    inputs = _model_garden_inputs(x)
    if mode == "infer":
        inputs.pop("masked_lm_positions")
        return _infer(tf, jit, encoder, inputs)

    loss = lambda: _model_garden_loss(pretrainer(inputs, training=True), x)  # noqa: E731
    optimizer = optimization.create_optimizer(INIT_LR, TRAIN_STEPS, WARMUP_STEPS)
    return _train(tf, jit, loss, lambda: pretrainer.trainable_variables, optimizer)


def _model_garden_build(config, strategy, precision, features):
    """The pretrainer, its optimizer and the variables it trains, built under `strategy` on
    one batch `features`."""
    import tensorflow as tf
    import tf_keras
    from official.nlp import optimization

    tf_keras.mixed_precision.set_global_policy(precision)
    with strategy.scope():
        _, pretrainer = model_garden_pretrainer(config)
        # Variables are made here, eagerly: a mirrored strategy cannot create them per replica
        # inside the compiled step.
        pretrainer(_model_garden_inputs(features), training=False)
        optimizer = optimization.create_optimizer(INIT_LR, 100000, WARMUP_STEPS)
        if precision == "mixed_float16":
            optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
    # The NSP head has its own pooling dense, so the encoder's pooler gets no gradient; it is
    # left out of the step as in Model Garden's own training.
    probe = {k: v[:1] for k, v in features.items()}
    with tf.GradientTape() as tape:
        loss = _model_garden_loss(pretrainer(_model_garden_inputs(probe), training=True), probe)
    grads = tape.gradient(loss, pretrainer.trainable_variables)
    tvars = [v for g, v in zip(grads, pretrainer.trainable_variables, strict=True) if g is not None]
    return pretrainer, optimizer, tvars


def model_garden_train_steps(config, strategy, precision, use_xla, features):
    """Builds Model Garden's pretrainer and returns `train_steps(iterator, num_steps) -> loss`
    with the same TFRecords, input pipeline, precision, strategy, clipping and optimizer
    settings as ours.

    Args:
        config: a `BertConfig` (sizes and dropout).
        strategy: a `tf.distribute.Strategy`.
        precision: "float32", "mixed_float16" or "mixed_bfloat16".
        use_xla: compile as the `Trainer` does with `--use_xla`.
        features: one per-replica batch of the pretraining features (builds the variables).
    """
    import tensorflow as tf

    pretrainer, optimizer, tvars = _model_garden_build(config, strategy, precision, features)
    replicas = strategy.num_replicas_in_sync
    float16 = precision == "mixed_float16"

    def loss_and_grads(batch):
        with tf.GradientTape() as tape:
            outputs = pretrainer(_model_garden_inputs(batch), training=True)
            loss = _model_garden_loss(outputs, batch, replicas)
            scaled = optimizer.get_scaled_loss(loss) if float16 else loss
        return loss, tape.gradient(scaled, tvars)

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
    """Trains Model Garden's pretrainer `args.warmup + args.steps` steps; returns (global
    examples/s, first call s).

    Timed from the end of the call that completes `args.warmup` steps to the end of the last,
    `args.iterations_per_loop` steps per call (the first call traces and compiles).
    """
    import tensorflow as tf

    from training.distributed_input import whole_batches

    iterator = whole_batches(strategy, dataset_fn, is_training=True)
    first = next(iter(dataset_fn(None)))
    per_replica = {k: v[: args.batch // strategy.num_replicas_in_sync] for k, v in first.items()}
    start = time.perf_counter()
    train_steps = model_garden_train_steps(config, strategy, args.precision, args.xla, per_replica)
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
