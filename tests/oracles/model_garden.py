"""Encoder outputs from Model Garden's TF2 ``BertEncoder`` on a converted TF1 checkpoint.

Usage::

    python -m tests.oracles.model_garden --checkpoint DIR/bert_model.ckpt \\
        --bert_config_file DIR/bert_config.json --inputs INPUTS.npz --out OUT.npz

Converts the TF1 checkpoint with tf-models-official's own converter
(``official.nlp.tools.tf2_bert_encoder_checkpoint_converter.convert_checkpoint``, which
renames/reshapes with ``tf1_bert_checkpoint_converter_lib`` and skips ``adam`` slots),
restores the result into an ``official.nlp.modeling.networks.BertEncoder`` built from the
original config and runs it with ``training=False`` on ``input_ids``, ``input_mask`` and
``segment_ids`` from ``INPUTS.npz``. ``OUT.npz`` receives ``sequence_output`` (float32
[B, S, H]), ``pooled_output`` (float32 [B, H]), ``encoder_outputs`` (float32 [L, B, S, H])
and ``embedding_output`` (float32 [B, S, H], after the embedding LayerNorm).

Must run with ``TF_USE_LEGACY_KERAS=1`` (set here if missing, before TensorFlow loads).
"""

import argparse
import os
import tempfile

import numpy as np


def _parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--checkpoint", required=True, help="TF1 checkpoint prefix.")
    parser.add_argument("--bert_config_file", required=True, help="Original bert_config.json.")
    parser.add_argument(
        "--inputs", required=True, help="npz with input_ids, input_mask, segment_ids."
    )
    parser.add_argument("--out", required=True, help="Output npz path.")
    return parser.parse_args(argv)


def _activation(hidden_act: str):
    """Model Garden's activation for an original ``hidden_act`` string.

    The original "gelu" is the tanh approximation; Model Garden's default ``tf_utils``
    mapping agrees today, but it is pinned here so that a change there cannot silently
    turn this oracle into the erf form.
    """
    import tf_keras
    from official.modeling import tf_utils

    if hidden_act.lower() == "gelu":
        return lambda x: tf_keras.activations.gelu(x, approximate=True)
    return tf_utils.get_activation(hidden_act)


def main(argv=None) -> None:
    """Converts, restores, runs and writes; see the module docstring.

    Args:
        argv: Command-line arguments without the program name; ``None`` means sys.argv.

    Raises:
        ValueError: If the inputs file lacks one of the three input arrays.
    """
    args = _parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import tensorflow as tf
    import tf_keras
    from official.legacy.bert import configs
    from official.nlp.modeling import networks
    from official.nlp.tools import tf2_bert_encoder_checkpoint_converter as converter

    with np.load(args.inputs) as data:
        missing = {"input_ids", "input_mask", "segment_ids"} - set(data.files)
        if missing:
            raise ValueError(
                f"{args.inputs} lacks {sorted(missing)}; it needs int arrays input_ids, "
                "input_mask and segment_ids of shape [batch, seq]."
            )
        inputs = {
            "input_word_ids": data["input_ids"].astype(np.int32),
            "input_mask": data["input_mask"].astype(np.int32),
            "input_type_ids": data["segment_ids"].astype(np.int32),
        }

    config = configs.BertConfig.from_json_file(args.bert_config_file)
    encoder = networks.BertEncoder(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        inner_dim=config.intermediate_size,
        inner_activation=_activation(config.hidden_act),
        output_dropout=config.hidden_dropout_prob,
        attention_dropout=config.attention_probs_dropout_prob,
        max_sequence_length=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        initializer=tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range),
        embedding_width=config.embedding_size,
        dict_outputs=True,
        return_word_embeddings=True,
    )

    with tempfile.TemporaryDirectory() as tmp:
        # The converter writes an object-based checkpoint under the name "encoder"; restoring
        # it into our own encoder also proves the variable layouts line up one to one.
        converter.convert_checkpoint(
            bert_config=config,
            output_path=os.path.join(tmp, "encoder"),
            v1_checkpoint=args.checkpoint,
            checkpoint_model_name="encoder",
            converted_model="encoder",
        )
        status = tf.train.Checkpoint(encoder=encoder).read(tf.train.latest_checkpoint(tmp))
        # Only the converter's save counter is left over.
        status.assert_existing_objects_matched().expect_partial()

    outputs = encoder(inputs, training=False)
    np.savez(
        args.out,
        sequence_output=outputs["sequence_output"].numpy(),
        pooled_output=outputs["pooled_output"].numpy(),
        encoder_outputs=np.stack([x.numpy() for x in outputs["encoder_outputs"]]),
        embedding_output=outputs["word_embeddings"].numpy(),
    )


if __name__ == "__main__":
    main()
