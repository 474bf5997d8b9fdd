"""BertModel: embeddings -> Transformer encoder -> pooler, as the original `modeling.BertModel`."""

import keras
import tensorflow as tf

from modeling.config import BertConfig
from modeling.embeddings import BertEmbeddings
from modeling.layers import dense
from modeling.transformer import RealTokens, TransformerLayer, attention_bias_from_mask


class Encoder(keras.layers.Layer):
    """The stack of L Transformer layers (scope `bert/encoder`, layers `layer_0`...).

    Args:
        config: a validated `BertConfig`.
        gradient_checkpointing: in training, keep only each layer's input for the backward
            pass and run the layer again there (`TransformerLayer.recomputed_call`): the
            same loss and gradients with activation memory of about one layer.
    """

    def __init__(self, config, gradient_checkpointing=False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = config.hidden_size
        self.gradient_checkpointing = gradient_checkpointing
        self.transformer_layers = [
            TransformerLayer(config, name=f"layer_{i}") for i in range(config.num_hidden_layers)
        ]

    def build(self, input_shape=None):
        for layer in self.transformer_layers:
            layer.build((None, None, self.hidden_size))

    def call(self, x, attention_bias, training=False, real_tokens=None, output_positions=None):
        """Runs the layers.

        Args:
            x: `[B, S, H]`.
            attention_bias: `[B, 1, 1, S]`.
            training: enables dropout.
            real_tokens: a `RealTokens`: the layers then run on the real tokens only.
            output_positions: int `[B, R]`: the last layer computes only these positions
                (see `TransformerLayer.call`).

        Returns:
            a list of L `[B, S, H]` (zeros at padding positions when packed); the last one
            `[B, R, H]` with output_positions.
        """
        if real_tokens is not None:
            x = real_tokens.pack(x)
        outputs = []
        last = len(self.transformer_layers) - 1
        for i, layer in enumerate(self.transformer_layers):
            rows = output_positions if i == last else None
            if training and self.gradient_checkpointing:
                x = layer.recomputed_call(
                    x, attention_bias, real_tokens=real_tokens, output_positions=rows
                )
            else:
                x = layer(
                    x,
                    attention_bias,
                    training=training,
                    real_tokens=real_tokens,
                    output_positions=rows,
                )
            # Unused layers' unpacking is pruned from the compiled step; picked rows are
            # already [B, R, H].
            outputs.append(real_tokens.unpack(x) if real_tokens is not None and rows is None else x)
        return outputs


class Pooler(keras.layers.Layer):
    """tanh dense on the first token's final hidden vector (scope `bert/pooler/dense`)."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = config.hidden_size
        self.dense = dense(config.hidden_size, "dense", config.initializer_range, tf.tanh)

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))

    def call(self, sequence_output):
        """Args: sequence_output `[B, S, H]`. Returns `[B, H]`."""
        return self.dense(sequence_output[:, 0])


class ConfigSerialization:
    """Keras `get_config`/`from_config` for models built from a `BertConfig`.

    The config travels as its JSON dict; `config_arguments` names further constructor
    arguments stored as attributes of the same names (e.g. `num_labels`).
    """

    config_arguments = ()

    def get_config(self):
        extra = {name: getattr(self, name) for name in self.config_arguments}
        return {"name": self.name, "config": self.config.to_dict(), **extra}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig.from_dict(config.pop("config")), **config)


class BertModel(ConfigSerialization, keras.Model):
    """The BERT encoder with the original release's semantics and checkpoint names.

    Every variable's Keras path equals its name in an original checkpoint (for example
    `bert/encoder/layer_0/attention/self/query/kernel`); `modeling/tf1_checkpoint.py` holds the
    explicit table used to load and save them. Dropout is active only when `training=True`.

    Example:

        config = BertConfig.from_json_file("uncased_L-12_H-768_A-12/bert_config.json")
        model = BertModel(config)
        outputs = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments})
        outputs["pooled_output"]  # [batch, hidden]

    Args:
        config: a `BertConfig` (validated here).
        name: model name; "bert" gives the original variable names.
        gradient_checkpointing: recompute each encoder layer in the backward pass instead of
            keeping its activations (`Encoder`); results are unchanged. Settable later as the
            attribute of the same name.
    """

    config_arguments = ("gradient_checkpointing",)

    def __init__(self, config, name="bert", gradient_checkpointing=False, **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = config.validate()
        self.embeddings = BertEmbeddings(config, name="embeddings")
        self.encoder = Encoder(config, gradient_checkpointing, name="encoder")
        self.pooler = Pooler(config, name="pooler")
        # Variables exist from construction on, so a checkpoint can be loaded at once.
        self.build()

    def build(self, input_shape=None):
        self.embeddings.build()
        self.encoder.build()
        self.pooler.build()

    @property
    def gradient_checkpointing(self):
        """Whether training recomputes the encoder layers (see `Encoder`)."""
        return self.encoder.gradient_checkpointing

    @gradient_checkpointing.setter
    def gradient_checkpointing(self, value):
        self.encoder.gradient_checkpointing = bool(value)

    @property
    def embedding_table(self):
        """The word-embedding variable `[V, H]`, shared with the masked-LM head."""
        return self.embeddings.word_embeddings

    def call(self, inputs, training=False):
        """Runs the encoder.

        Args:
            inputs: dict with `input_ids` (int32 `[B, S]`) and optionally `input_mask` (int32
                `[B, S]`, 1 = real token; default all ones), `segment_ids` (int32 `[B, S]`;
                default all zeros), `token_positions` (int32 `[T]`: the layers run on these
                tokens only, for callers that read real positions only; see
                `RealTokens`) and `output_positions` (int `[B, R]`: the last layer computes
                these positions only, for callers that read no others, such as the
                pretraining heads; put position 0 first for the pooled output).
            training: enables dropout.

        Returns:
            dict with `sequence_output` `[B, S, H]` (`[B, R, H]`, the rows at
            `output_positions`, when given), `pooled_output` `[B, H]` (from the first row),
            `all_encoder_layers` (list of L `[B, S, H]`, the embedding output not included;
            zeros at padding positions with `token_positions`; the last as sequence_output)
            and `embedding_output` `[B, S, H]`.
        """
        if not isinstance(inputs, dict) or "input_ids" not in inputs:
            raise ValueError(
                "BertModel expects a dict with 'input_ids' (and optionally 'input_mask', "
                f"'segment_ids'); got {type(inputs).__name__}."
            )
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        if input_ids.shape.rank != 2:
            raise ValueError(f"input_ids must be [batch, seq_length], got shape {input_ids.shape}.")
        input_mask = inputs.get("input_mask")
        if input_mask is None:
            input_mask = tf.ones_like(input_ids)
        segment_ids = inputs.get("segment_ids")
        if segment_ids is None:
            segment_ids = tf.zeros_like(input_ids)
        segment_ids = tf.cast(segment_ids, tf.int32)

        embedding_output = self.embeddings(input_ids, segment_ids, training=training)
        bias = attention_bias_from_mask(input_mask)
        positions = inputs.get("token_positions")
        real_tokens = RealTokens(input_mask, positions) if positions is not None else None
        layers = self.encoder(
            embedding_output,
            bias,
            training=training,
            real_tokens=real_tokens,
            output_positions=inputs.get("output_positions"),
        )
        sequence_output = layers[-1]
        return {
            "sequence_output": sequence_output,
            "pooled_output": self.pooler(sequence_output),
            "all_encoder_layers": layers,
            "embedding_output": embedding_output,
        }
