"""BERT model code: config, encoder, heads, checkpoints, optimizer.

The names below load their module on first use, so that `modeling.config`, which the runners
read before TensorFlow loads, does not pull the Keras model in with it.
"""

import importlib

_HOMES = {
    "BertConfig": "modeling.config",
    "BertModel": "modeling.bert_model",
    "BertPretrainer": "modeling.task_models",
    "ClassifierHead": "modeling.heads",
    "PretrainingHeads": "modeling.heads",
    "SpanHead": "modeling.heads",
    "TokenClassifierHead": "modeling.heads",
    "load_tf1_checkpoint": "modeling.tf1_checkpoint",
    "save_tf1_checkpoint": "modeling.tf1_checkpoint",
}

__all__ = sorted(_HOMES)


def __getattr__(name):
    if name not in _HOMES:
        raise AttributeError(f"module 'modeling' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
