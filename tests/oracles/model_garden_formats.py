"""Model Garden's own TF2 checkpoints and TF Hub SavedModel of a TF1 BERT checkpoint.

Usage::

    python -m tests.oracles.model_garden_formats --checkpoint DIR/bert_model.ckpt \\
        --bert_config_file DIR/bert_config.json --vocab_file DIR/vocab.txt --out OUT_DIR

Writes, with tf-models-official's code only:

* ``OUT_DIR/encoder/``: ``tf2_bert_encoder_checkpoint_converter.convert_checkpoint`` with
  ``converted_model="encoder"`` (a ``BertEncoder`` under ``encoder/``);
* ``OUT_DIR/legacy/``: the same encoder saved as ``tf.train.Checkpoint(model=...)``, the older
  key layout that Model Garden's exporter still restores;
* ``OUT_DIR/pretrainer/``: the converter with ``converted_model="pretrainer"`` (a
  ``BertPretrainerV2``: encoder and masked-LM head, no next-sentence head);
* ``OUT_DIR/hub/``: ``export_tfhub_lib.export_model`` of the pretrainer checkpoint with the
  ``mlm`` sub-object;
* ``OUT_DIR/classifier/``: a ``BertClassifier`` on that encoder, saved as
  ``tf.train.Checkpoint(model=classifier)`` (a fine-tuned model, not an encoder).

Must run with ``TF_USE_LEGACY_KERAS=1`` (set here if missing, before TensorFlow loads).
"""

import argparse
import os


def main(argv=None) -> None:
    """Writes the five layouts described in the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for name in ("checkpoint", "bert_config_file", "vocab_file", "out"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import tensorflow as tf
    from official.legacy.bert import configs
    from official.nlp.modeling import models
    from official.nlp.tools import export_tfhub_lib
    from official.nlp.tools import tf2_bert_encoder_checkpoint_converter as converter

    config = configs.BertConfig.from_json_file(args.bert_config_file)
    for kind in ("encoder", "pretrainer"):
        converter.convert_checkpoint(
            bert_config=config,
            output_path=os.path.join(args.out, kind, "ckpt"),
            v1_checkpoint=args.checkpoint,
            # The converter adds the model under this name next to a pretrainer's own items
            # (encoder, masked_lm); "encoder" would shadow them.
            checkpoint_model_name="encoder" if kind == "encoder" else "model",
            converted_model=kind,
        )
    export_tfhub_lib.export_model(
        os.path.join(args.out, "hub"),
        bert_config=config,
        model_checkpoint_path=tf.train.latest_checkpoint(os.path.join(args.out, "pretrainer")),
        with_mlm=True,
        vocab_file=args.vocab_file,
        do_lower_case=True,
    )
    # Layer numbering in object checkpoints depends on what was built before in the process, so
    # the exporter runs before this script builds models of its own.
    encoder = converter._create_bert_model(config)
    tf.train.Checkpoint(encoder=encoder).read(
        tf.train.latest_checkpoint(os.path.join(args.out, "encoder"))
    ).expect_partial()
    tf.train.Checkpoint(model=encoder).save(os.path.join(args.out, "legacy", "ckpt"))
    classifier = models.BertClassifier(encoder, num_classes=3)
    tf.train.Checkpoint(model=classifier).save(os.path.join(args.out, "classifier", "ckpt"))


if __name__ == "__main__":
    main()
