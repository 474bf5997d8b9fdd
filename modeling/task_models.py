"""The task models: `BertModel` plus one of the heads, as the original scripts build them.

* `BertPretrainer`: `PretrainingHeads` (`cls/predictions/*`, `cls/seq_relationship/*`),
  for run_pretraining.
* `BertClassifier`: `ClassifierHead` (`output_weights`, `output_bias`) on the pooled output, for
  run_classifier.
* `BertSpanModel`: `SpanHead` (`cls/squad/*`) on every token, for run_squad.
* `BertTokenClassifier`: `TokenClassifierHead` (`cls/ner/*`) on every token, for run_ner.

A new head is one class in `modeling/heads.py` and one small class here.
"""

import keras
import tensorflow as tf

from modeling.bert_model import BertModel, ConfigSerialization
from modeling.config import BertConfig
from modeling.heads import ClassifierHead, PretrainingHeads, SpanHead, TokenClassifierHead


def _fine_tuning_head_config(config):
    # The original hard-codes stddev 0.02 for the fine-tuning heads, whatever the config says.
    return BertConfig.from_dict({**config.to_dict(), "initializer_range": 0.02})


def hidden_states_of(bert_outputs):
    """The encoder's hidden states from `BertModel`'s outputs: the embeddings' output, then each
    layer's, L + 1 of `[B, S, H]` (a distillation student's, matched to its teacher's)."""
    return [bert_outputs["embedding_output"], *bert_outputs["all_encoder_layers"]]


class _EncoderWithHead(ConfigSerialization, keras.Model):
    """`self.bert` (`bert/*`) plus a head that subclasses create after calling this.

    The fine-tuning models' `call` takes `hidden_states=True` to return `(outputs,
    hidden_states)`: the head's outputs as without it and `hidden_states_of` the encoder, every
    layer computed at every position.
    """

    def __init__(self, config, name, **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config
        self.bert = BertModel(config)

    def build(self, input_shape=None):
        # Both parts create their variables at construction.
        pass


class BertPretrainer(_EncoderWithHead):
    """The encoder and the pretraining heads (`cls/*`), as run_pretraining builds them.

    Example:

        pretrainer = BertPretrainer(config)
        out = pretrainer({"input_ids": ids, "input_mask": mask, "segment_ids": segments,
                          "masked_lm_positions": positions})
        out["masked_lm_logits"]  # [batch * max_predictions, vocab]

    Args:
        config: a `BertConfig`.
    """

    def __init__(self, config, name="bert_pretrainer", **kwargs):
        super().__init__(config, name, **kwargs)
        self.cls = PretrainingHeads(config)
        self.build()

    def call(self, inputs, training=False):
        """Args: inputs: BertModel's input dict plus `masked_lm_positions` int32 `[B, P]`.

        The heads read the last layer at [CLS] and the P masked positions only, so the last
        layer computes those 1 + P rows alone (`output_positions` of `BertModel`): the same
        values as the original's full layer followed by its gather, with the queries, output
        projection and feed-forward network of that layer on 1 + P rows instead of S.

        Returns:
            dict with `pooled_output` `[B, H]`, `masked_lm_logits` `[B * P, V]` and
            `next_sentence_logits` `[B, 2]` (float32).
        """
        positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
        # [CLS] first (a column of its own: P may be 0, --max_predictions_per_seq=0).
        cls_rows = tf.zeros([tf.shape(positions)[0], 1], tf.int32)
        rows = tf.concat([cls_rows, positions], axis=1)
        out = self.bert({**inputs, "output_positions": rows}, training=training)
        heads = self.cls(
            out["sequence_output"][:, 1:], out["pooled_output"], None, self.bert.embedding_table
        )
        return {"pooled_output": out["pooled_output"], **heads}


class BertClassifier(_EncoderWithHead):
    """Sentence (pair) classification or regression on `pooled_output`, as run_classifier.

    The head's `output_weights` are initialised with stddev 0.02 whatever the config says,
    as the original hard-codes it.

    Example:

        model = BertClassifier(config, num_labels=3)
        logits = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments})

    Args:
        config: a `BertConfig`.
        num_labels: classes C (1 for regression).
        dropout_rate: dropout on the pooled output while training; the original hard-codes
            0.1.
    """

    config_arguments = ("num_labels", "dropout_rate")

    def __init__(self, config, num_labels, dropout_rate=0.1, name="bert_classifier", **kwargs):
        super().__init__(config, name, **kwargs)
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.classifier = ClassifierHead(
            num_labels, _fine_tuning_head_config(config), dropout_rate=dropout_rate
        )
        self.build()

    def call(self, inputs, training=False, hidden_states=False):
        """Args: BertModel's input dict. Returns float32 logits `[B, C]`.

        The head reads the last layer at [CLS] only, so that layer computes that one row
        (`output_positions` of `BertModel`; keys and values from every position), but with
        `hidden_states` (see `_EncoderWithHead`), which need every row.
        """
        if hidden_states:
            out = self.bert(inputs, training=training)
        else:
            first = tf.zeros_like(tf.cast(inputs["input_ids"], tf.int32)[:, :1])
            out = self.bert({**inputs, "output_positions": first}, training=training)
        logits = self.classifier(out["pooled_output"], training=training)
        return (logits, hidden_states_of(out)) if hidden_states else logits


class BertSpanModel(_EncoderWithHead):
    """Answer-span prediction (SQuAD) on `sequence_output`, as run_squad.

    The head's `output_weights` are initialised with stddev 0.02 whatever the config says, as
    the original hard-codes it. No position is masked: padding and question tokens get logits
    too, exactly as in the original.

    Example:

        model = BertSpanModel(config)
        start_logits, end_logits = model(
            {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
        )

    Args:
        config: a `BertConfig`.
    """

    def __init__(self, config, name="bert_span", **kwargs):
        super().__init__(config, name, **kwargs)
        self.span = SpanHead(_fine_tuning_head_config(config))
        self.build()

    def call(self, inputs, training=False, hidden_states=False):
        """Args: BertModel's input dict. Returns (start_logits, end_logits), float32 `[B, S]`
        (and the hidden states with `hidden_states`, see `_EncoderWithHead`)."""
        out = self.bert(inputs, training=training)
        logits = self.span(out["sequence_output"])
        return (logits, hidden_states_of(out)) if hidden_states else logits


class BertTokenClassifier(_EncoderWithHead):
    """A tag for every token (NER) from `sequence_output`, as run_ner.

    The head's `output_weights` are initialised with stddev 0.02, as the original's other
    fine-tuning heads.

    Example:

        model = BertTokenClassifier(config, num_labels=9)
        logits = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments})

    Args:
        config: a `BertConfig`.
        num_labels: tags C.
        dropout_rate: dropout on the sequence output while training (0.1, as the classifier's).
    """

    config_arguments = ("num_labels", "dropout_rate")

    def __init__(
        self, config, num_labels, dropout_rate=0.1, name="bert_token_classifier", **kwargs
    ):
        super().__init__(config, name, **kwargs)
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.classifier = TokenClassifierHead(
            num_labels, _fine_tuning_head_config(config), dropout_rate=dropout_rate
        )
        self.build()

    def call(self, inputs, training=False, hidden_states=False):
        """Args: BertModel's input dict. Returns float32 logits `[B, S, C]` (and the hidden
        states with `hidden_states`, see `_EncoderWithHead`)."""
        out = self.bert(inputs, training=training)
        logits = self.classifier(out["sequence_output"], training=training)
        return (logits, hidden_states_of(out)) if hidden_states else logits
