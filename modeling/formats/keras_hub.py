"""keras-hub BERT presets (`BertBackbone`, and `BertMaskedLM` when the MLM head is present) <->
the original layout.

A preset is a directory (`config.json`, `model.weights.h5`, `tokenizer.json` with
`assets/tokenizer/vocabulary.txt`, `metadata.json`; a masked-LM task adds `task.json` and
`task.weights.h5`). keras-hub itself reads and writes it, so it is imported only here and only
when this format is used (`pip install keras-hub`).

keras-hub's BERT always applies the tanh GELU in the encoder (the original's "gelu") and the
exact GELU in its masked-LM transform, which the original computes with the tanh form: masked-LM
logits from a converted checkpoint differ slightly from the original's, the encoder's do not.
"""

import json
import os

import numpy as np
import tensorflow as tf
from absl import logging

from modeling.config import BertConfig
from modeling.formats.model_garden import HEADS_FLAT, HEADS_IN, HEADS_OUT, KEEP, to_original

_MLM_PAIRS = [
    ("mlm_head/output_bias", "cls/predictions/output_bias", KEEP),
    ("mlm_head/intermediate_dense/kernel", "cls/predictions/transform/dense/kernel", KEEP),
    ("mlm_head/intermediate_dense/bias", "cls/predictions/transform/dense/bias", KEEP),
    ("mlm_head/intermediate_layer_norm/gamma", "cls/predictions/transform/LayerNorm/gamma", KEEP),
    ("mlm_head/intermediate_layer_norm/beta", "cls/predictions/transform/LayerNorm/beta", KEEP),
]


def _backbone_pairs(num_layers):
    """(keras-hub weight path, original name, reshape) for every weight of a BertBackbone."""
    pairs = [
        ("token_embedding/embeddings", "bert/embeddings/word_embeddings", KEEP),
        ("position_embedding/embeddings", "bert/embeddings/position_embeddings", KEEP),
        ("segment_embedding/embeddings", "bert/embeddings/token_type_embeddings", KEEP),
        ("embeddings_layer_norm/gamma", "bert/embeddings/LayerNorm/gamma", KEEP),
        ("embeddings_layer_norm/beta", "bert/embeddings/LayerNorm/beta", KEEP),
    ]
    for i in range(num_layers):
        ours, theirs = f"bert/encoder/layer_{i}", f"transformer_layer_{i}"
        for part in ("query", "key", "value"):
            pairs.append(
                (
                    f"{theirs}/self_attention_layer/{part}/kernel",
                    f"{ours}/attention/self/{part}/kernel",
                    HEADS_IN,
                )
            )
            pairs.append(
                (
                    f"{theirs}/self_attention_layer/{part}/bias",
                    f"{ours}/attention/self/{part}/bias",
                    HEADS_FLAT,
                )
            )
        pairs += [
            (
                f"{theirs}/self_attention_layer/attention_output/kernel",
                f"{ours}/attention/output/dense/kernel",
                HEADS_OUT,
            ),
            (
                f"{theirs}/self_attention_layer/attention_output/bias",
                f"{ours}/attention/output/dense/bias",
                KEEP,
            ),
        ]
        for theirs_part, ours_part in (
            ("self_attention_layer_norm", "attention/output/LayerNorm"),
            ("feedforward_layer_norm", "output/LayerNorm"),
        ):
            for leaf in ("gamma", "beta"):
                pairs.append((f"{theirs}/{theirs_part}/{leaf}", f"{ours}/{ours_part}/{leaf}", KEEP))
        for theirs_part, ours_part in (
            ("feedforward_intermediate_dense", "intermediate/dense"),
            ("feedforward_output_dense", "output/dense"),
        ):
            for leaf in ("kernel", "bias"):
                pairs.append((f"{theirs}/{theirs_part}/{leaf}", f"{ours}/{ours_part}/{leaf}", KEEP))
    pairs += [
        ("pooled_dense/kernel", "bert/pooler/dense/kernel", KEEP),
        ("pooled_dense/bias", "bert/pooler/dense/bias", KEEP),
    ]
    return pairs


def _import_keras_hub():
    try:
        import keras_hub
    except ImportError:
        raise ValueError(
            "The keras_hub format needs the keras-hub package: pip install keras-hub"
        ) from None
    return keras_hub


def _read_json(path):
    with tf.io.gfile.GFile(path) as f:
        try:
            return json.load(f)
        except ValueError as err:
            raise ValueError(f"{path} is not valid JSON: {err}") from None


def _check_preset(preset_dir):
    config_path = os.path.join(preset_dir, "config.json")
    if not tf.io.gfile.exists(config_path):
        raise ValueError(
            f"{preset_dir} is not a keras-hub preset: no config.json (a preset directory is "
            "written by keras-hub's save_to_preset)."
        )
    config = _read_json(config_path)
    if "model_type" in config:
        raise ValueError(
            f"{config_path} is a Hugging Face config (model_type {config['model_type']!r}), not a "
            "keras-hub preset: use --input_format=hf for this folder."
        )
    registered = config.get("registered_name", "")
    if registered != "keras_hub>BertBackbone":
        raise ValueError(
            f"{config_path} describes {registered or config.get('class_name')!r}, not a BERT "
            "model: only keras-hub presets of keras_hub>BertBackbone can be converted."
        )
    return config["config"]


def read_keras_hub(preset_dir):
    """Reads a keras-hub BERT preset.

    Returns:
        (BertConfig, dict original name -> float32 np.ndarray, vocab path or None).

    Raises:
        ValueError: for a directory that is not a keras-hub BERT preset.
    """
    settings = _check_preset(preset_dir)
    keras_hub = _import_keras_hub()
    task_path = os.path.join(preset_dir, "task.json")
    with_mlm = (
        tf.io.gfile.exists(task_path)
        and _read_json(task_path).get("registered_name") == "keras_hub>BertMaskedLM"
    )
    if with_mlm:
        model = keras_hub.models.BertMaskedLM.from_preset(preset_dir, load_weights=True)
        backbone, pairs = model.backbone, _MLM_PAIRS
        weights = {w.path: w for w in model.weights}
    else:
        backbone = keras_hub.models.BertBackbone.from_preset(preset_dir, load_weights=True)
        pairs, weights = [], {}
    weights.update({w.path: w for w in backbone.weights})
    arrays = {}
    for theirs, ours, how in _backbone_pairs(backbone.num_layers) + pairs:
        arrays[ours] = to_original(weights[theirs].numpy(), how)
    config = BertConfig(
        vocab_size=settings["vocabulary_size"],
        hidden_size=settings["hidden_dim"],
        num_hidden_layers=settings["num_layers"],
        num_attention_heads=settings["num_heads"],
        intermediate_size=settings["intermediate_dim"],
        hidden_act="gelu",
        hidden_dropout_prob=settings.get("dropout", 0.1),
        attention_probs_dropout_prob=settings.get("dropout", 0.1),
        max_position_embeddings=settings.get("max_sequence_length", 512),
        type_vocab_size=settings.get("num_segments", 2),
    )
    vocab = os.path.join(preset_dir, "assets", "tokenizer", "vocabulary.txt")
    return config, arrays, (vocab if tf.io.gfile.exists(vocab) else None)


def keras_hub_backbone(config):
    """keras-hub's `BertBackbone` of the sizes of `config` (a `BertConfig`), freshly initialised."""
    return _import_keras_hub().models.BertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size,
    )


def write_keras_hub(preset_dir, config, arrays, vocab, do_lower_case):
    """Writes a keras-hub preset into `preset_dir` (which must not exist yet).

    A `BertMaskedLM` task (with its tokenizer and preprocessor) when `arrays` hold the masked-LM
    head, else a `BertBackbone` (with its tokenizer when there is a vocab).

    Raises:
        ValueError: for an activation keras-hub's BertBackbone does not compute, or an MLM head
            without a vocab (the task preset needs a tokenizer).
    """
    if config.hidden_act != "gelu":
        raise ValueError(
            f"keras-hub's BertBackbone computes the tanh GELU only; this model's hidden_act is "
            f"{config.hidden_act!r}, so its outputs would differ. Convert to hf or tf1 instead."
        )
    keras_hub = _import_keras_hub()
    backbone = keras_hub_backbone(config)
    tokenizer = (
        keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=do_lower_case) if vocab else None
    )
    with_mlm = any(n.startswith("cls/predictions/") for n in arrays)
    if any(n.startswith("cls/seq_relationship/") for n in arrays):
        logging.warning("keras-hub has no next-sentence head: cls/seq_relationship/* not written.")
    pairs = _backbone_pairs(config.num_hidden_layers)
    if with_mlm:
        if tokenizer is None:
            raise ValueError(
                "A keras-hub BertMaskedLM preset needs a tokenizer: put vocab.txt beside the "
                "input checkpoint."
            )
        preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
            tokenizer, sequence_length=config.max_position_embeddings
        )
        model = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=preprocessor)
        pairs = pairs + _MLM_PAIRS
    else:
        model = backbone
    weights = {w.path: w for w in model.weights}
    for theirs, ours, _ in pairs:
        target = weights[theirs]
        target.assign(np.asarray(arrays[ours], np.float32).reshape(tuple(target.shape)))
    model.save_to_preset(preset_dir)
    if tokenizer is not None and not with_mlm:
        tokenizer.save_to_preset(preset_dir)
