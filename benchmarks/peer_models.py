"""The training steps (and forward passes) that `bench_train_step.py` times, one per peer.

Every builder takes the encoder shape, the mode ("train" or "infer"), whether to compile with
XLA and the NumPy inputs of `make_inputs`, and returns a zero-argument compiled function: the
step of this project's `BertPretrainer`, keras-hub's `BertBackbone` or Model Garden's
`BertEncoder`, with the same pretraining heads, loss and dropout.
"""

import numpy as np

PEERS = ("ours", "ours_xla", "keras_hub", "keras_hub_xla", "model_garden", "model_garden_xla")

# Encoder shapes; every config uses the uncased WordPiece vocabulary and 2 segment types.
CONFIGS = {
    "mini": {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024},
    "small": {"layers": 4, "hidden": 512, "heads": 8, "intermediate": 2048},
    "base": {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072},
}
VOCAB_SIZE = 30522
MAX_POSITIONS = 512
TYPE_VOCAB_SIZE = 2
DROPOUT = 0.1
INIT_RANGE = 0.02
# Learning-rate schedule of the step; its values do not change the work done.
INIT_LR, TRAIN_STEPS, WARMUP_STEPS = 1e-4, 10000, 100


def make_inputs(batch, seq_length, predictions, seed=0):
    """Random pretraining features as numpy arrays with the original TFRecord keys.

    Args:
        batch: sequences per step B.
        seq_length: tokens per sequence S.
        predictions: masked positions per sequence P (distinct, in [1, S)).
        seed: numpy seed.

    Returns:
        dict of int32 `input_ids`, `input_mask`, `segment_ids` `[B, S]`,
        `masked_lm_positions`, `masked_lm_ids` `[B, P]`, float32 `masked_lm_weights` `[B, P]`
        and int32 `next_sentence_labels` `[B]`.
    """
    rng = np.random.default_rng(seed)
    segment_ids = np.zeros((batch, seq_length), np.int32)
    segment_ids[:, seq_length // 2 :] = 1
    positions = np.stack(
        [
            np.sort(rng.choice(np.arange(1, seq_length), predictions, replace=False))
            for _ in range(batch)
        ]
    ).astype(np.int32)
    return {
        "input_ids": rng.integers(1000, VOCAB_SIZE, (batch, seq_length)).astype(np.int32),
        "input_mask": np.ones((batch, seq_length), np.int32),
        "segment_ids": segment_ids,
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.integers(1000, VOCAB_SIZE, (batch, predictions)).astype(np.int32),
        "masked_lm_weights": np.ones((batch, predictions), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (batch,)).astype(np.int32),
    }


def _weighted_mlm_loss(tf, log_probs_fn, logits, ids, weights):
    """sum(w * nll) / (sum(w) + 1e-5) over `[B, P, V]` logits, for the peers' own heads."""
    nll = log_probs_fn(ids, tf.cast(logits, tf.float32))
    return tf.reduce_sum(weights * nll) / (tf.reduce_sum(weights) + 1e-5)


def build_ours(shape, mode, jit, features):
    """This project's BertPretrainer and loss (train) or BertModel (infer) as a compiled step."""
    import tensorflow as tf

    from modeling import BertConfig, BertModel
    from modeling.optimization import create_optimizer
    from training.tasks import PretrainingTask

    config = BertConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=shape["hidden"],
        num_hidden_layers=shape["layers"],
        num_attention_heads=shape["heads"],
        intermediate_size=shape["intermediate"],
        hidden_act="gelu",
        hidden_dropout_prob=DROPOUT,
        attention_probs_dropout_prob=DROPOUT,
        max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=TYPE_VOCAB_SIZE,
        initializer_range=INIT_RANGE,
    )
    x = {k: tf.constant(v) for k, v in features.items()}
    if mode == "infer":
        model = BertModel(config)
        inputs = {k: x[k] for k in ("input_ids", "input_mask", "segment_ids")}

        @tf.function(jit_compile=jit)
        def infer():
            out = model(inputs, training=False)
            return out["sequence_output"], out["pooled_output"]

        return infer

    # The product's model and loss (training/tasks.py), without the loop around them.
    task = PretrainingTask(config)
    model = task.build_model()
    optimizer = create_optimizer(INIT_LR, TRAIN_STEPS, WARMUP_STEPS)

    @tf.function(jit_compile=jit)
    def train_step():
        with tf.GradientTape() as tape:
            aux = task.forward(x, training=True)
            terms, weights = task.loss_numerators(aux), task.loss_weights(x)
            loss = tf.add_n(
                [n / (w + e) for n, w, e in zip(terms, weights, task.loss_epsilons, strict=True)]
            )
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return train_step


def build_keras_hub(shape, mode, jit, features):
    """keras-hub's BertBackbone with BertMaskedLM's head and a Dense(2) NSP head."""
    import keras
    import keras_hub
    import tensorflow as tf

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB_SIZE,
        num_layers=shape["layers"],
        num_heads=shape["heads"],
        hidden_dim=shape["hidden"],
        intermediate_dim=shape["intermediate"],
        dropout=DROPOUT,
        max_sequence_length=MAX_POSITIONS,
        num_segments=TYPE_VOCAB_SIZE,
    )
    x = {k: tf.constant(v) for k, v in features.items()}
    inputs = {
        "token_ids": x["input_ids"],
        "segment_ids": x["segment_ids"],
        "padding_mask": x["input_mask"],
    }
    if mode == "infer":

        @tf.function(jit_compile=jit)
        def infer():
            out = backbone(inputs, training=False)
            return out["sequence_output"], out["pooled_output"]

        return infer

    init = keras.initializers.TruncatedNormal(stddev=INIT_RANGE)
    # The head BertMaskedLM builds, on the backbone's tied token embedding.
    mlm_head = keras_hub.layers.MaskedLMHead(
        vocabulary_size=VOCAB_SIZE,
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
    weights = x["masked_lm_weights"]

    def step_loss():
        out = backbone(inputs, training=True)
        logits = mlm_head(out["sequence_output"], x["masked_lm_positions"])
        nsp_logits = nsp_head(out["pooled_output"])
        mlm = _weighted_mlm_loss(
            tf,
            lambda y, p: keras.losses.sparse_categorical_crossentropy(y, p, from_logits=True),
            logits,
            x["masked_lm_ids"],
            weights,
        )
        nsp = tf.reduce_mean(
            keras.losses.sparse_categorical_crossentropy(
                x["next_sentence_labels"], nsp_logits, from_logits=True
            )
        )
        return mlm + nsp

    step_loss()  # Builds both heads before the variable list is taken.
    variables = (
        backbone.trainable_variables + mlm_head.trainable_variables + nsp_head.trainable_variables
    )
    # Deduplicate the tied embedding, which the head also tracks.
    variables = list({id(v): v for v in variables}.values())
    optimizer.build(variables)

    @tf.function(jit_compile=jit)
    def train_step():
        with tf.GradientTape() as tape:
            loss = step_loss()
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return train_step


def model_garden_pretrainer(shape, dropout=DROPOUT, max_positions=MAX_POSITIONS):
    """Model Garden's BertEncoder + BertPretrainerV2 with a `next_sentence` head (tf_keras).

    The heads are those of Model Garden's BERT pretraining task (MaskedLM on the tied word
    embeddings, `ClassificationHead` for next-sentence prediction), the activations its tanh
    GELU, as this project's `hidden_act="gelu"`.

    Args:
        shape: dict of `layers`, `hidden`, `heads`, `intermediate` (as `CONFIGS`).
        dropout: hidden and attention dropout rate.
        max_positions: size of the position embedding.

    Returns:
        `(encoder, pretrainer)`: the `networks.BertEncoder` (dict outputs) and the
        `models.BertPretrainerV2` on it, not yet built.
    """
    import tf_keras
    from official.nlp.modeling import layers, models, networks

    def gelu(v):
        return tf_keras.activations.gelu(v, approximate=True)

    init = tf_keras.initializers.TruncatedNormal(stddev=INIT_RANGE)
    encoder = networks.BertEncoder(
        vocab_size=VOCAB_SIZE,
        hidden_size=shape["hidden"],
        num_layers=shape["layers"],
        num_attention_heads=shape["heads"],
        max_sequence_length=max_positions,
        type_vocab_size=TYPE_VOCAB_SIZE,
        inner_dim=shape["intermediate"],
        inner_activation=gelu,
        output_dropout=dropout,
        attention_dropout=dropout,
        initializer=init,
        dict_outputs=True,
    )
    pretrainer = models.BertPretrainerV2(
        encoder_network=encoder,
        mlm_activation=gelu,
        mlm_initializer=init,
        classification_heads=[
            layers.ClassificationHead(
                inner_dim=shape["hidden"],
                num_classes=2,
                dropout_rate=dropout,
                initializer=init,
                name="next_sentence",
            )
        ],
    )
    return encoder, pretrainer


def build_model_garden(shape, mode, jit, features):
    """Model Garden's BertEncoder + BertPretrainerV2 with a `next_sentence` head (tf_keras)."""
    import tensorflow as tf
    import tf_keras
    from official.nlp import optimization

    encoder, pretrainer = model_garden_pretrainer(shape)
    x = {k: tf.constant(v) for k, v in features.items()}
    inputs = {
        "input_word_ids": x["input_ids"],
        "input_mask": x["input_mask"],
        "input_type_ids": x["segment_ids"],
    }
    if mode == "infer":

        @tf.function(jit_compile=jit)
        def infer():
            out = encoder(inputs, training=False)
            return out["sequence_output"], out["pooled_output"]

        return infer

    optimizer = optimization.create_optimizer(INIT_LR, TRAIN_STEPS, WARMUP_STEPS)
    pretrain_inputs = dict(inputs, masked_lm_positions=x["masked_lm_positions"])
    sparse_ce = tf_keras.losses.sparse_categorical_crossentropy

    @tf.function(jit_compile=jit)
    def train_step():
        with tf.GradientTape() as tape:
            out = pretrainer(pretrain_inputs, training=True)
            mlm = _weighted_mlm_loss(
                tf,
                lambda y, p: sparse_ce(y, p, from_logits=True),
                out["mlm_logits"],
                x["masked_lm_ids"],
                x["masked_lm_weights"],
            )
            nsp = tf.reduce_mean(
                sparse_ce(
                    x["next_sentence_labels"],
                    tf.cast(out["next_sentence"], tf.float32),
                    from_logits=True,
                )
            )
            loss = mlm + nsp
        variables = pretrainer.trainable_variables
        grads = tape.gradient(loss, variables)
        # The NSP head has its own pooling dense, so the encoder's pooler gets no gradient.
        optimizer.apply_gradients(
            [(g, v) for g, v in zip(grads, variables, strict=True) if g is not None]
        )
        return loss

    return train_step
