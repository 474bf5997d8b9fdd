"""Reference outputs and a TF1 checkpoint from Google's original ``bert.modeling``.

Usage::

    python -m tests.oracles.original_bert --out_dir DIR [--hidden_act gelu] [--seed 0]
        [--with_heads]

Builds a tiny original ``BertModel`` (vocab 99, hidden 32, 3 layers, 4 heads, intermediate
37, 64 positions, 3 token types) in ``tf.compat.v1`` graph mode, overwrites every variable
(LayerNorm gamma/beta and biases included) with seeded random values, runs it on a padded
batch (4 x 11) and writes to ``DIR``:

* ``bert_model.ckpt.*``: a TF1 name-based checkpoint with all model variables, a
  ``global_step`` and ``X/adam_m``/``X/adam_v`` slots for every trainable ``X``, laid out
  like a checkpoint that ``run_pretraining.py`` writes;
* ``bert_config.json``: the original ``BertConfig.to_json_string()``;
* ``variables.json``: ``[[name, shape], ...]`` for every variable in the checkpoint;
* ``reference.npz``: inputs and outputs (see ``main``).

With ``--with_heads`` the pre-training heads are built with ``bert.run_pretraining``'s own
``get_masked_lm_output`` and ``get_next_sentence_output``.

Must run with ``TF_USE_LEGACY_KERAS=1`` (set here if missing, before TensorFlow loads).
"""

import argparse
import json
import os

import numpy as np

from tests.helpers.tiny_config import TINY_CONFIG

BATCH_SIZE = 4
SEQ_LENGTH = 11
MAX_PREDICTIONS = 5
# Row 0 is unpadded; the others end in padding of different lengths.
SEQ_LENGTHS = (11, 7, 9, 2)
# The tests' tiny config with 3 layers (so layer indexes -1, 0, -2 differ) and 3 token types
# (so loading it into a 2-type model is a mismatch the tests can provoke).
ORACLE_CONFIG = dict(TINY_CONFIG, num_hidden_layers=3, type_vocab_size=3, initializer_range=0.02)
# Spread of the random weights: wide enough that every term of the network matters, small
# enough that tanh/softmax do not saturate with hidden size 32.
_WEIGHT_STDDEV = 0.2
_GLOBAL_STEP = 7


def _parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out_dir", required=True, help="Folder for all outputs.")
    parser.add_argument("--hidden_act", default="gelu", help="gelu, relu, tanh or linear.")
    parser.add_argument("--seed", type=int, default=0, help="Seed for weights and inputs.")
    parser.add_argument(
        "--with_heads", action="store_true", help="Also build the MLM and NSP heads."
    )
    parser.add_argument(
        "--init_checkpoint",
        default=None,
        help="Restore every variable from this checkpoint the way the original scripts do "
        "(get_assignment_map_from_checkpoint + init_from_checkpoint) instead of randomizing; "
        "then only reference.npz is written.",
    )
    parser.add_argument(
        "--bert_config_file", default=None, help="Config to build with --init_checkpoint."
    )
    parser.add_argument(
        "--inputs",
        default=None,
        help="npz holding the batch to run (input_ids, input_mask, segment_ids and, with "
        "--with_heads, masked_lm_positions/ids/weights, next_sentence_labels) instead of a "
        "generated one.",
    )
    return parser.parse_args(argv)


def make_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Draws the padded encoder batch.

    Args:
        rng: Source of randomness.

    Returns:
        ``input_ids``, ``input_mask`` and ``segment_ids``, each int32 [B, S]. Padded
        positions have id 0; segment ids are random in [0, 2) everywhere.
    """
    positions = np.arange(SEQ_LENGTH)[None, :]
    input_mask = (positions < np.array(SEQ_LENGTHS)[:, None]).astype(np.int32)
    input_ids = rng.integers(1, ORACLE_CONFIG["vocab_size"], size=input_mask.shape) * input_mask
    segment_ids = rng.integers(0, 2, size=input_mask.shape)
    return {
        "input_ids": input_ids.astype(np.int32),
        "input_mask": input_mask,
        "segment_ids": segment_ids.astype(np.int32),
    }


def make_head_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Draws masked-LM and next-sentence labels in the layout of run_pretraining.py.

    Args:
        rng: Source of randomness.

    Returns:
        ``masked_lm_positions``, ``masked_lm_ids`` (int32 [B, P]), ``masked_lm_weights``
        (float32 [B, P]; 0.0 marks padding predictions, which point at position 0 with id
        0) and ``next_sentence_labels`` (int32 [B]).
    """
    positions = np.zeros((BATCH_SIZE, MAX_PREDICTIONS), np.int32)
    ids = np.zeros((BATCH_SIZE, MAX_PREDICTIONS), np.int32)
    weights = np.zeros((BATCH_SIZE, MAX_PREDICTIONS), np.float32)
    for row, length in enumerate(SEQ_LENGTHS):
        # Position 0 holds [CLS] in real data, so predictions start at 1.
        count = min(MAX_PREDICTIONS - (row % 2), length - 1)
        chosen = np.sort(rng.choice(np.arange(1, length), size=count, replace=False))
        positions[row, :count] = chosen
        ids[row, :count] = rng.integers(1, ORACLE_CONFIG["vocab_size"], size=count)
        weights[row, :count] = 1.0
    labels = np.array([0, 1, 1, 0], np.int32)
    return {
        "masked_lm_positions": positions,
        "masked_lm_ids": ids,
        "masked_lm_weights": weights,
        "next_sentence_labels": labels,
    }


def _random_value(name: str, shape, rng: np.random.Generator) -> np.ndarray:
    """A non-trivial value for the variable ``name`` (gammas scatter around one)."""
    noise = rng.normal(0.0, _WEIGHT_STDDEV, size=shape).astype(np.float32)
    if name.endswith("/gamma"):
        return noise + np.float32(1.0)
    return noise


def _restore_and_write(args, modeling, fetches, inputs, head_inputs) -> None:
    """Initialises the graph's variables from --init_checkpoint as run_classifier.py does and
    writes the outputs; fails if any trainable variable is not found in the checkpoint."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    tvars = tf1.trainable_variables()
    assignment_map, initialized = modeling.get_assignment_map_from_checkpoint(
        tvars, args.init_checkpoint
    )
    missing = [v.name for v in tvars if v.name not in initialized]
    if missing:
        raise SystemExit(f"variables not in {args.init_checkpoint}: {missing}")
    tf1.train.init_from_checkpoint(args.init_checkpoint, assignment_map)
    with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        results = sess.run(fetches)
    np.savez(os.path.join(args.out_dir, "reference.npz"), **inputs, **head_inputs, **results)


def main(argv=None) -> None:
    """Builds the original model, randomizes it, runs it and writes the references.

    ``reference.npz`` holds ``input_ids``, ``input_mask``, ``segment_ids`` (int32 [B, S]),
    ``embedding_output``, ``sequence_output`` (float32 [B, S, H]),
    ``all_encoder_layers`` (float32 [L, B, S, H]), ``pooled_output`` (float32 [B, H]),
    ``embedding_table`` (float32 [V, H]) and, with ``--with_heads``, the head inputs of
    ``make_head_inputs`` plus ``masked_lm_log_probs`` (float32 [B*P, V]),
    ``masked_lm_example_loss`` (float32 [B*P]), ``masked_lm_loss`` (scalar),
    ``next_sentence_log_probs`` (float32 [B, 2]), ``next_sentence_example_loss`` (float32
    [B]) and ``next_sentence_loss`` (scalar).

    Args:
        argv: Command-line arguments without the program name; ``None`` means sys.argv.
    """
    args = _parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import tensorflow as tf

    from tests.oracles import contrib_stub

    contrib_stub.install()
    from bert import modeling

    tf1 = tf.compat.v1
    rng = np.random.default_rng(args.seed)
    inputs = make_inputs(rng)
    head_inputs = make_head_inputs(rng) if args.with_heads else {}
    if args.inputs:
        given = dict(np.load(args.inputs))
        inputs = {k: given[k] for k in inputs}
        head_inputs = {k: given[k] for k in head_inputs}
    if args.bert_config_file:
        config = modeling.BertConfig.from_json_file(args.bert_config_file)
    else:
        config = modeling.BertConfig(hidden_act=args.hidden_act, **ORACLE_CONFIG)
    os.makedirs(args.out_dir, exist_ok=True)

    graph = tf.Graph()
    with graph.as_default():
        model = modeling.BertModel(
            config=config,
            is_training=False,
            input_ids=tf1.constant(inputs["input_ids"]),
            input_mask=tf1.constant(inputs["input_mask"]),
            token_type_ids=tf1.constant(inputs["segment_ids"]),
            use_one_hot_embeddings=False,
        )
        fetches = {
            "embedding_output": model.get_embedding_output(),
            "all_encoder_layers": tf1.stack(model.get_all_encoder_layers()),
            "sequence_output": model.get_sequence_output(),
            "pooled_output": model.get_pooled_output(),
            "embedding_table": model.get_embedding_table(),
        }
        if args.with_heads:
            # Importing run_pretraining defines its absl flags; harmless in this process.
            from bert import run_pretraining

            mlm_loss, mlm_example_loss, mlm_log_probs = run_pretraining.get_masked_lm_output(
                config,
                model.get_sequence_output(),
                model.get_embedding_table(),
                tf1.constant(head_inputs["masked_lm_positions"]),
                tf1.constant(head_inputs["masked_lm_ids"]),
                tf1.constant(head_inputs["masked_lm_weights"]),
            )
            nsp_loss, nsp_example_loss, nsp_log_probs = run_pretraining.get_next_sentence_output(
                config, model.get_pooled_output(), tf1.constant(head_inputs["next_sentence_labels"])
            )
            fetches.update(
                masked_lm_log_probs=mlm_log_probs,
                masked_lm_example_loss=mlm_example_loss,
                masked_lm_loss=mlm_loss,
                next_sentence_log_probs=nsp_log_probs,
                next_sentence_example_loss=nsp_example_loss,
                next_sentence_loss=nsp_loss,
            )

        if args.init_checkpoint:
            _restore_and_write(args, modeling, fetches, inputs, head_inputs)
            return

        # Optimizer state as AdamWeightDecayOptimizer names it; loaders must skip it.
        model_vars = tf1.trainable_variables()
        slots = []
        for var in model_vars:
            for suffix in ("adam_m", "adam_v"):
                slots.append(
                    tf1.get_variable(
                        f"{var.op.name}/{suffix}",
                        shape=var.shape,
                        dtype=tf.float32,
                        initializer=tf1.zeros_initializer(),
                        trainable=False,
                    )
                )
        global_step = tf1.train.get_or_create_global_step()

        feeds, assigns = {}, []
        for var in model_vars + slots:
            value = _random_value(var.op.name, var.shape.as_list(), rng)
            placeholder = tf1.placeholder(tf.float32, shape=var.shape)
            assigns.append(tf1.assign(var, placeholder))
            feeds[placeholder] = value
        assigns.append(tf1.assign(global_step, _GLOBAL_STEP))
        saver = tf1.train.Saver(var_list=tf1.global_variables())

        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            sess.run(assigns, feed_dict=feeds)
            results = sess.run(fetches)
            ckpt_prefix = os.path.join(args.out_dir, "bert_model.ckpt")
            saver.save(sess, ckpt_prefix, write_meta_graph=False)

    variables = [[name, list(shape)] for name, shape in tf.train.list_variables(ckpt_prefix)]
    with open(os.path.join(args.out_dir, "variables.json"), "w") as f:
        json.dump(variables, f, indent=1)
    with open(os.path.join(args.out_dir, "bert_config.json"), "w") as f:
        f.write(config.to_json_string())
    np.savez(os.path.join(args.out_dir, "reference.npz"), **inputs, **head_inputs, **results)


if __name__ == "__main__":
    main()
