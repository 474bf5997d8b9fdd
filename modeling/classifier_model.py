"""BertClassifier: BertModel plus run_classifier's head on the pooled output."""

import keras

from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.heads import ClassifierHead


class BertClassifier(keras.Model):
    """Sentence (pair) classification or regression on `pooled_output`, as run_classifier.

    The head's `output_weights` are initialised with stddev 0.02 whatever the config says,
    as the original hard-codes it.

    Example:

        model = BertClassifier(config, num_labels=3)
        logits = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments})

    Args:
        config: a `BertConfig`.
        num_labels: classes C (1 for regression).
    """

    def __init__(self, config, num_labels, name="bert_classifier", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config
        self.num_labels = num_labels
        self.bert = BertModel(config)
        head_config = BertConfig.from_dict({**config.to_dict(), "initializer_range": 0.02})
        self.classifier = ClassifierHead(num_labels, head_config)
        self.build()

    def build(self, input_shape=None):
        # Both parts create their variables at construction.
        pass

    def call(self, inputs, training=False):
        """Args: BertModel's input dict. Returns float32 logits `[B, C]`."""
        pooled = self.bert(inputs, training=training)["pooled_output"]
        return self.classifier(pooled, training=training)

    def get_config(self):
        return {"name": self.name, "config": self.config.to_dict(), "num_labels": self.num_labels}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)
