"""Hugging Face transformers' own fine-tuned BERT classes on an HF folder: their logits.

Usage::

    python -m tests.oracles.transformers_task_heads --model_dir HF_DIR --inputs INPUTS.npz \\
        --out OUT.npz

Loads ``HF_DIR`` with the TensorFlow class of its ``config.json``'s ``architectures``
(``TFBertForSequenceClassification``, ``TFBertForTokenClassification`` or
``TFBertForQuestionAnswering``; transformers' TensorFlow classes read safetensors without torch)
and runs it on ``input_ids``, ``input_mask`` and ``segment_ids`` from ``INPUTS.npz``. ``OUT.npz``
receives ``logits`` ([B, C] or [B, S, C]) or ``start_logits`` and ``end_logits`` ([B, S]),
``id2label`` (the model config's class names by id) and, from transformers' loading report,
``missing`` and ``unexpected`` weights.

Must run with ``TF_USE_LEGACY_KERAS=1`` (set here if missing, before TensorFlow loads).
"""

import argparse
import json
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

    import transformers

    with open(os.path.join(args.model_dir, "config.json")) as f:
        architecture = json.load(f)["architectures"][0]
    model_class = getattr(transformers, "TF" + architecture)
    with np.load(args.inputs) as data:
        feed = dict(
            input_ids=data["input_ids"].astype(np.int32),
            attention_mask=data["input_mask"].astype(np.int32),
            token_type_ids=data["segment_ids"].astype(np.int32),
        )
    model, info = model_class.from_pretrained(args.model_dir, output_loading_info=True)
    out = model(**feed, training=False)
    if architecture == "BertForQuestionAnswering":
        results = dict(start_logits=out.start_logits.numpy(), end_logits=out.end_logits.numpy())
    else:
        results = dict(logits=out.logits.numpy())
    id2label = model.config.id2label
    np.savez(
        args.out,
        missing=np.array(info["missing_keys"], dtype=str),
        unexpected=np.array(info["unexpected_keys"], dtype=str),
        id2label=np.array([id2label[i] for i in range(len(id2label))], dtype=str),
        **results,
    )


if __name__ == "__main__":
    main()
