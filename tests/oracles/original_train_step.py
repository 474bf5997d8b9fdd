"""The original run_pretraining.py training op, run for a number of steps from a checkpoint.

Usage::

    python -m tests.oracles.original_train_step --bert_config_file C --init_checkpoint CKPT \
        --input_file RECORDS --batch_size B --max_seq_length S --max_predictions_per_seq P \
        --learning_rate LR --num_train_steps N --num_warmup_steps W --out OUT.npz

Builds the original's `model_fn` (``bert.run_pretraining.model_fn_builder``: BertModel, the
masked-LM and next-sentence heads and losses, `init_from_checkpoint`, and
``bert.optimization.create_optimizer``: the warmup + linear-decay schedule, global-norm
clipping to 1.0 and AdamWeightDecayOptimizer) in TRAIN mode, feeds it the original's own
evaluation-order input (``input_fn_builder(..., is_training=False)``: the files in order,
batches of B, no shuffling) and runs its training op N times in ``tf.compat.v1`` graph mode.

Writes ``OUT.npz``: every trainable variable after the last step under its checkpoint name,
``global_step`` and ``losses`` (float32 [N]: the loss of each step, before its update).

TF 2 has no ``tf.compat.v1.estimator``: the module's ``tf`` is replaced by
``tf1_graph.with_estimator``. Must run with ``TF_USE_LEGACY_KERAS=1`` (set here if missing).
"""

import argparse
import os

import numpy as np


def _parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for name in ("bert_config_file", "init_checkpoint", "input_file", "out"):
        parser.add_argument(f"--{name}", required=True)
    for name in (
        "batch_size",
        "max_seq_length",
        "max_predictions_per_seq",
        "num_train_steps",
        "num_warmup_steps",
    ):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--learning_rate", type=float, required=True)
    return parser.parse_args(argv)


def main(argv=None):
    """Runs the original training op `--num_train_steps` times and writes `--out`."""
    args = _parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import tensorflow as tf

    from tests.oracles import contrib_stub
    from tests.oracles.tf1_graph import read_global_step_before_increment, with_estimator

    contrib_stub.install()
    from bert import modeling, run_pretraining

    tf1 = tf.compat.v1
    run_pretraining.tf = with_estimator(tf1)
    config = modeling.BertConfig.from_json_file(args.bert_config_file)
    graph = tf.Graph()
    with graph.as_default():
        input_fn = run_pretraining.input_fn_builder(
            [args.input_file],
            args.max_seq_length,
            args.max_predictions_per_seq,
            is_training=False,
        )
        dataset = input_fn({"batch_size": args.batch_size})
        features = tf1.data.make_one_shot_iterator(dataset).get_next()
        model_fn = run_pretraining.model_fn_builder(
            bert_config=config,
            init_checkpoint=args.init_checkpoint,
            learning_rate=args.learning_rate,
            num_train_steps=args.num_train_steps,
            num_warmup_steps=args.num_warmup_steps,
            use_tpu=False,
            use_one_hot_embeddings=False,
        )
        spec = model_fn(features, None, "train", {"batch_size": args.batch_size})
        read_global_step_before_increment(graph)
        trainable = {v.op.name: v for v in tf1.trainable_variables()}
        global_step = tf1.train.get_global_step(graph)
        losses = []
        with tf1.Session(graph=graph) as sess:
            # init_from_checkpoint made the checkpoint's values the initializers.
            sess.run(tf1.global_variables_initializer())
            for _ in range(args.num_train_steps):
                loss, _ = sess.run([spec.loss, spec.train_op])
                losses.append(loss)
            values = sess.run(trainable)
            step = sess.run(global_step)
    np.savez(
        args.out,
        losses=np.asarray(losses, np.float32),
        global_step=np.asarray(step),
        **values,
    )


if __name__ == "__main__":
    main()
