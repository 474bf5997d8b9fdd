"""Reference features and layer outputs from the original ``bert.extract_features``.

Usage::

    python -m tests.oracles.original_extract --input_file IN --vocab_file V \
        --bert_config_file C --init_checkpoint CKPT --max_seq_length S --layers -1,-2 --out_dir D

The original script's ``main`` needs TPUEstimator, which TF 2 no longer has, so this runs its
own ``read_examples`` and ``convert_examples_to_features`` with the original tokenizer, then the
original ``BertModel`` restored with the original assignment map, and writes
``features.json`` (unique_id, tokens, input_ids, input_mask, input_type_ids per example) and
``layers.npz`` (``layer_<j>``: float32 [N, S, H] for the j-th requested index).
"""

import argparse
import json
import os

import numpy as np


def main(argv=None):
    parser = argparse.ArgumentParser()
    for name in ("input_file", "vocab_file", "bert_config_file", "init_checkpoint", "out_dir"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--layers", default="-1,-2,-3,-4")
    parser.add_argument("--do_lower_case", type=int, default=1)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

    import tensorflow as tf

    from tests.oracles import contrib_stub

    contrib_stub.install()
    from absl import flags
    from bert import extract_features, modeling, tokenization

    # The original tokenizer reads a module-level flag (preserve_unused_tokens, default off).
    flags.FLAGS.mark_as_parsed()
    tf1 = tf.compat.v1
    tokenizer = tokenization.FullTokenizer(args.vocab_file, bool(args.do_lower_case))
    examples = extract_features.read_examples(args.input_file)
    features = extract_features.convert_examples_to_features(
        examples, args.max_seq_length, tokenizer
    )
    layer_indexes = [int(x) for x in args.layers.split(",")]
    config = modeling.BertConfig.from_json_file(args.bert_config_file)
    graph = tf.Graph()
    with graph.as_default():
        model = modeling.BertModel(
            config=config,
            is_training=False,
            input_ids=tf1.constant([f.input_ids for f in features], tf.int32),
            input_mask=tf1.constant([f.input_mask for f in features], tf.int32),
            token_type_ids=tf1.constant([f.input_type_ids for f in features], tf.int32),
        )
        tvars = tf1.trainable_variables()
        assignment, _ = modeling.get_assignment_map_from_checkpoint(tvars, args.init_checkpoint)
        tf1.train.init_from_checkpoint(args.init_checkpoint, assignment)
        layers = model.get_all_encoder_layers()
        fetches = {f"layer_{j}": layers[i] for j, i in enumerate(layer_indexes)}
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            values = sess.run(fetches)
    os.makedirs(args.out_dir, exist_ok=True)
    np.savez(os.path.join(args.out_dir, "layers.npz"), **values)
    listing = [
        {
            "unique_id": f.unique_id,
            "tokens": f.tokens,
            "input_ids": f.input_ids,
            "input_mask": f.input_mask,
            "input_type_ids": f.input_type_ids,
        }
        for f in features
    ]
    with open(os.path.join(args.out_dir, "features.json"), "w") as f:
        json.dump(listing, f)


if __name__ == "__main__":
    main()
