"""Hugging Face transformers' own BERT on an HF folder: encoder and pretraining outputs.

Usage::

    python -m tests.oracles.transformers_bert --model_dir HF_DIR --inputs INPUTS.npz \\
        --out OUT.npz

Loads ``HF_DIR`` (config.json + model.safetensors) with ``TFBertModel.from_pretrained`` and
``TFBertForPreTraining.from_pretrained`` (transformers' TensorFlow classes read safetensors
without torch) and runs them on ``input_ids``, ``input_mask`` and ``segment_ids`` from
``INPUTS.npz``. ``OUT.npz`` receives ``sequence_output`` [B, S, H], ``pooled_output`` [B, H],
``prediction_logits`` [B, S, V], ``seq_relationship_logits`` [B, 2], and, from transformers'
loading report, ``missing`` (weights either class did not find) and ``unexpected`` (weights
``TFBertForPreTraining`` did not use).

Must run with ``TF_USE_LEGACY_KERAS=1`` (set here if missing, before TensorFlow loads).
"""

import argparse
import os

import numpy as np


def main(argv=None) -> None:
    """Loads, runs and writes; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for name in ("model_dir", "inputs", "out"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    from transformers import TFBertForPreTraining, TFBertModel

    with np.load(args.inputs) as data:
        feed = dict(
            input_ids=data["input_ids"].astype(np.int32),
            attention_mask=data["input_mask"].astype(np.int32),
            token_type_ids=data["segment_ids"].astype(np.int32),
        )
    results, missing, unexpected = {}, [], []
    encoder, info = TFBertModel.from_pretrained(args.model_dir, output_loading_info=True)
    # The encoder class skips the heads (reported as unexpected); only missing ones count here.
    missing += info["missing_keys"]
    out = encoder(**feed, training=False)
    results["sequence_output"] = out.last_hidden_state.numpy()
    results["pooled_output"] = out.pooler_output.numpy()
    pretrainer, info = TFBertForPreTraining.from_pretrained(
        args.model_dir, output_loading_info=True
    )
    missing += info["missing_keys"]
    unexpected += info["unexpected_keys"]
    out = pretrainer(**feed, training=False)
    results["prediction_logits"] = out.prediction_logits.numpy()
    results["seq_relationship_logits"] = out.seq_relationship_logits.numpy()
    np.savez(
        args.out,
        missing=np.array(missing, dtype=str),
        unexpected=np.array(unexpected, dtype=str),
        **results,
    )


if __name__ == "__main__":
    main()
