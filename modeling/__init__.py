"""BERT model code: config, encoder, heads, checkpoints, optimizer."""

from modeling.bert_model import BertModel
from modeling.checkpoint import load_tf1_checkpoint, save_tf1_checkpoint
from modeling.config import BertConfig
from modeling.heads import ClassifierHead, PretrainingHeads, SpanHead, TokenClassifierHead
from modeling.pretrainer import BertPretrainer

__all__ = [
    "BertConfig",
    "BertModel",
    "BertPretrainer",
    "ClassifierHead",
    "PretrainingHeads",
    "SpanHead",
    "TokenClassifierHead",
    "load_tf1_checkpoint",
    "save_tf1_checkpoint",
]
