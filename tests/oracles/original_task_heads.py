"""The original's fine-tuning heads and losses on one batch: run_classifier.py and run_squad.py.

Usage::

    python -m tests.oracles.original_task_heads --task classifier|squad \
        --bert_config_file C --init_checkpoint CKPT --inputs IN.npz --out OUT.npz \
        [--num_labels N]

``IN.npz`` holds ``input_ids``, ``input_mask``, ``segment_ids`` (int32 [B, S]) and the labels:
``label_ids`` (int32 [B]) for the classifier, ``start_positions`` and ``end_positions`` (int32
[B]) for SQuAD. The checkpoint holds the encoder and the head's weights (``output_weights`` /
``output_bias`` for the classifier, ``cls/squad/output_*`` for SQuAD), loaded with the
original's `init_from_checkpoint`.

Writes ``OUT.npz``:

* classifier: ``bert.run_classifier.create_model`` (is_training=False: no dropout) gives
  ``logits`` [B, N], ``probabilities`` [B, N], ``per_example_loss`` [B] and ``loss``;
* squad: ``bert.run_squad.model_fn_builder``'s `model_fn` in PREDICT mode gives
  ``start_logits`` and ``end_logits`` [B, S]; in TRAIN mode (run with a config without dropout)
  its ``loss``.

One task per process: both original modules define the same absl flags. Must run with
``TF_USE_LEGACY_KERAS=1`` (set here if missing).
"""

import argparse
import os

import numpy as np


def _parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--task", choices=("classifier", "squad"), required=True)
    for name in ("bert_config_file", "init_checkpoint", "inputs", "out"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--num_labels", type=int, default=2)
    return parser.parse_args(argv)


def _restore(tf1, modeling, init_checkpoint):
    """The original scripts' loading: every trainable variable the checkpoint names."""
    assignment_map, _ = modeling.get_assignment_map_from_checkpoint(
        tf1.trainable_variables(), init_checkpoint
    )
    tf1.train.init_from_checkpoint(init_checkpoint, assignment_map)


def _classifier(tf1, modeling, config, args, inputs):
    from bert import run_classifier

    (loss, per_example_loss, logits, probabilities) = run_classifier.create_model(
        config,
        False,
        tf1.constant(inputs["input_ids"]),
        tf1.constant(inputs["input_mask"]),
        tf1.constant(inputs["segment_ids"]),
        tf1.constant(inputs["label_ids"]),
        args.num_labels,
        False,
    )
    _restore(tf1, modeling, args.init_checkpoint)
    fetches = {
        "loss": loss,
        "per_example_loss": per_example_loss,
        "logits": logits,
        "probabilities": probabilities,
    }
    with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        return sess.run(fetches)


def _squad_spec(tf1, config, args, inputs, mode):
    from bert import run_squad

    from tests.oracles.tf1_graph import with_estimator

    run_squad.tf = with_estimator(tf1)
    names = ["input_ids", "input_mask", "segment_ids"]
    if mode == "train":
        names += ["start_positions", "end_positions"]
    features = {name: tf1.constant(inputs[name]) for name in names}
    features["unique_ids"] = tf1.range(inputs["input_ids"].shape[0])
    model_fn = run_squad.model_fn_builder(
        bert_config=config,
        init_checkpoint=args.init_checkpoint,
        learning_rate=1e-5,
        num_train_steps=10,
        num_warmup_steps=1,
        use_tpu=False,
        use_one_hot_embeddings=False,
    )
    return model_fn(features, None, mode, {})


def _squad(tf, tf1, config, args, inputs):
    results = {}
    for mode in ("infer", "train"):
        with tf.Graph().as_default():
            spec = _squad_spec(tf1, config, args, inputs, mode)
            fetches = (
                {"loss": spec.loss}
                if mode == "train"
                else {k: spec.predictions[k] for k in ("start_logits", "end_logits")}
            )
            with tf1.Session() as sess:
                sess.run(tf1.global_variables_initializer())
                results.update(sess.run(fetches))
    return results


def main(argv=None):
    """Runs the original head of `--task` on `--inputs` and writes `--out`."""
    args = _parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import tensorflow as tf

    from tests.oracles import contrib_stub

    contrib_stub.install()
    from bert import modeling

    tf1 = tf.compat.v1
    # create_model reads `shape[-1].value`: TF1's Dimension objects, not TF2's ints.
    tf1.disable_v2_tensorshape()
    config = modeling.BertConfig.from_json_file(args.bert_config_file)
    with np.load(args.inputs) as npz:
        inputs = {name: npz[name] for name in npz.files}
    if args.task == "classifier":
        with tf.Graph().as_default():
            results = _classifier(tf1, modeling, config, args, inputs)
    else:
        results = _squad(tf, tf1, config, args, inputs)
    np.savez(args.out, **results)


if __name__ == "__main__":
    main()
