"""BertSpanModel: BertModel plus run_squad's start/end head on every token."""

import keras

from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.heads import SpanHead


class BertSpanModel(keras.Model):
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
        super().__init__(name=name, **kwargs)
        self.config = config
        self.bert = BertModel(config)
        head_config = BertConfig.from_dict({**config.to_dict(), "initializer_range": 0.02})
        self.span = SpanHead(head_config)
        self.build()

    def build(self, input_shape=None):
        # Both parts create their variables at construction.
        pass

    def call(self, inputs, training=False):
        """Args: BertModel's input dict. Returns (start_logits, end_logits), float32 `[B, S]`."""
        sequence = self.bert(inputs, training=training)["sequence_output"]
        return self.span(sequence)

    def get_config(self):
        return {"name": self.name, "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)
