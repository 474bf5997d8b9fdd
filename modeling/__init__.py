"""BERT model code: config, encoder, heads, checkpoints, optimizer."""

from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.heads import ClassifierHead, PretrainingHeads, SpanHead, TokenClassifierHead
from modeling.task_models import BertPretrainer
from modeling.tf1_checkpoint import load_tf1_checkpoint, save_tf1_checkpoint

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
