"""BertPretrainer: BertModel plus the masked-LM and next-sentence heads in one Keras model."""

import keras

from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.heads import PretrainingHeads


class BertPretrainer(keras.Model):
    """The encoder (`bert/*`) and the pretraining heads (`cls/*`), as run_pretraining builds them.

    Example:

        pretrainer = BertPretrainer(config)
        out = pretrainer({"input_ids": ids, "input_mask": mask, "segment_ids": segments,
                          "masked_lm_positions": positions})
        out["masked_lm_logits"]  # [batch * max_predictions, vocab]

    Args:
        config: a `BertConfig`.
    """

    def __init__(self, config, name="bert_pretrainer", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config
        self.bert = BertModel(config)
        self.cls = PretrainingHeads(config)
        self.build()

    def build(self, input_shape=None):
        # Both parts create their variables at construction.
        pass

    def call(self, inputs, training=False):
        """Args: inputs: BertModel's dict plus `masked_lm_positions` int32 `[B, P]`.

        Returns:
            BertModel's output dict plus `masked_lm_logits` `[B * P, V]` and
            `next_sentence_logits` `[B, 2]` (float32).
        """
        out = dict(self.bert(inputs, training=training))
        out.update(
            self.cls(
                out["sequence_output"],
                out["pooled_output"],
                inputs["masked_lm_positions"],
                self.bert.embedding_table,
            )
        )
        return out

    def get_config(self):
        return {"name": self.name, "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)
