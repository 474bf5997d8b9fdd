"""Times one BERT pretraining step (or a forward pass) of one implementation, in this process.

A training step is forward + backward + optimizer update of BERT with the two pretraining heads:
masked LM on `--predictions` gathered positions per sequence, decoder tied to the word
embeddings, plus next-sentence prediction; fp32, dropout 0.1 on. Inference is the encoder alone
(sequence and pooled output), `training=False`. Inputs are random token ids with no padding.

Peers (each run in a process of its own by `run_benchmarks.py`):

| peer | model | optimizer |
|---|---|---|
| `ours`, `ours_xla` | `modeling.BertPretrainer` + `modeling.losses` | `create_optimizer` |
| `keras_hub`, `keras_hub_xla` | `BertBackbone` + `MaskedLMHead` + Dense(2) NSP | `keras.optimizers.AdamW` |
| `model_garden`, `model_garden_xla` | `BertEncoder` + `BertPretrainerV2` + NSP head | its `AdamWeightDecay` |

The `_xla` peers compile the step with `tf.function(jit_compile=True)`; the others use a plain
`tf.function`. Model Garden runs on tf_keras and needs `TF_USE_LEGACY_KERAS=1` (set here if
missing, before TensorFlow loads).

Prints one JSON line: per-step wall times in seconds after `--warmup` untimed steps (the first
call traces and compiles), their median, the time of the first call and the load average.

    python benchmarks/bench_train_step.py --peer ours --config mini --mode train --batch 8
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

PEERS = ("ours", "ours_xla", "keras_hub", "keras_hub_xla", "model_garden", "model_garden_xla")

# Encoder shapes; every config uses the uncased WordPiece vocabulary and 2 segment types.
CONFIGS = {
    "mini": {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024},
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
    """This project's BertPretrainer (train) or BertModel (infer) as a compiled step."""
    import tensorflow as tf

    from modeling import BertConfig, BertModel, BertPretrainer
    from modeling.losses import classification_loss, masked_lm_loss
    from modeling.optimization import create_optimizer

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

    model = BertPretrainer(config)
    optimizer = create_optimizer(INIT_LR, TRAIN_STEPS, WARMUP_STEPS)
    inputs = {k: x[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}

    @tf.function(jit_compile=jit)
    def train_step():
        with tf.GradientTape() as tape:
            out = model(inputs, training=True)
            mlm, _ = masked_lm_loss(
                out["masked_lm_logits"], x["masked_lm_ids"], x["masked_lm_weights"]
            )
            nsp, _ = classification_loss(out["next_sentence_logits"], x["next_sentence_labels"])
            loss = mlm + nsp
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


def build_model_garden(shape, mode, jit, features):
    """Model Garden's BertEncoder + BertPretrainerV2 with a `next_sentence` head (tf_keras)."""
    import tensorflow as tf
    import tf_keras
    from official.nlp import optimization
    from official.nlp.modeling import layers, models, networks

    def gelu(v):
        return tf_keras.activations.gelu(v, approximate=True)

    init = tf_keras.initializers.TruncatedNormal(stddev=INIT_RANGE)
    encoder = networks.BertEncoder(
        vocab_size=VOCAB_SIZE,
        hidden_size=shape["hidden"],
        num_layers=shape["layers"],
        num_attention_heads=shape["heads"],
        max_sequence_length=MAX_POSITIONS,
        type_vocab_size=TYPE_VOCAB_SIZE,
        inner_dim=shape["intermediate"],
        inner_activation=gelu,
        output_dropout=DROPOUT,
        attention_dropout=DROPOUT,
        initializer=init,
        dict_outputs=True,
    )
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

    # The heads of Model Garden's BERT pretraining task (MaskedLM + ClassificationHead).
    pretrainer = models.BertPretrainerV2(
        encoder_network=encoder,
        mlm_activation=gelu,
        mlm_initializer=init,
        classification_heads=[
            layers.ClassificationHead(
                inner_dim=shape["hidden"],
                num_classes=2,
                dropout_rate=DROPOUT,
                initializer=init,
                name="next_sentence",
            )
        ],
    )
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


def run(peer, config, mode, batch, seq_length, predictions, steps, warmup):
    """Builds the peer's step, runs `warmup` untimed calls, then times `steps` calls.

    Returns:
        dict ready for JSON: the arguments plus `times` (wall seconds per step), `median`,
        `cpu_times` (process CPU seconds per step), `first_call_s`, `build_s` and the load
        average before and after.
    """
    load_before = os.getloadavg()
    start = time.perf_counter()
    base_peer = peer.removesuffix("_xla")
    builders = {
        "ours": build_ours,
        "keras_hub": build_keras_hub,
        "model_garden": build_model_garden,
    }
    features = make_inputs(batch, seq_length, predictions)
    step = builders[base_peer](CONFIGS[config], mode, peer.endswith("_xla"), features)
    build_s = time.perf_counter() - start

    def call():
        # Materialising a result waits for the whole step; outputs are small.
        result = step()
        first = result[1] if isinstance(result, tuple) else result
        first.numpy()
        return result

    first_call_s = None
    for i in range(warmup):
        t0 = time.perf_counter()
        value = call()
        if i == 0:
            first_call_s = time.perf_counter() - t0
            if mode == "train" and not np.isfinite(float(value.numpy())):
                raise ValueError(f"{peer}: the loss of the first step is {float(value)}.")
    times, cpu_times = [], []
    for _ in range(steps):
        c0, t0 = time.process_time(), time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    return {
        "peer": peer,
        "config": config,
        "mode": mode,
        "batch": batch,
        "seq_length": seq_length,
        "predictions": predictions if mode == "train" else 0,
        "warmup": warmup,
        "times": [round(t, 5) for t in times],
        "median": round(statistics.median(times), 5),
        # CPU seconds of this process per step: less sensitive than wall time to other load.
        "cpu_times": [round(t, 5) for t in cpu_times],
        "first_call_s": None if first_call_s is None else round(first_call_s, 3),
        "build_s": round(build_s, 3),
        "loadavg_before": [round(v, 2) for v in load_before],
        "loadavg_after": [round(v, 2) for v in os.getloadavg()],
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--peer", required=True, choices=PEERS)
    parser.add_argument("--config", default="mini", choices=sorted(CONFIGS))
    parser.add_argument("--mode", default="train", choices=("train", "infer"))
    parser.add_argument("--batch", type=int, default=8, help="Sequences per step.")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument(
        "--predictions", type=int, default=20, help="max_predictions_per_seq (train only)."
    )
    parser.add_argument("--steps", type=int, default=10, help="Timed steps.")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed steps first (>= 1).")
    args = parser.parse_args(argv)
    for name in ("batch", "seq_length", "steps", "warmup"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}.")
    if args.mode == "train" and not 1 <= args.predictions < args.seq_length:
        parser.error(
            f"--predictions must be in [1, seq_length) = [1, {args.seq_length}), "
            f"got {args.predictions}."
        )
    if args.seq_length > MAX_POSITIONS:
        parser.error(f"--seq_length must be <= {MAX_POSITIONS}, got {args.seq_length}.")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.peer.startswith("model_garden"):
        # Model Garden is built on tf_keras; this must be set before TensorFlow is imported.
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # The project's packages live one directory up.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = run(
        args.peer,
        args.config,
        args.mode,
        args.batch,
        args.seq_length,
        args.predictions,
        args.steps,
        args.warmup,
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
