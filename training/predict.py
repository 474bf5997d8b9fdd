"""Batched inference over in-memory features with one compiled graph."""

import numpy as np
import tensorflow as tf


def iterate_batches(features, batch_size):
    """Yields (features of the batch, dict of int32 arrays `[batch_size, S]`).

    The last batch is padded with copies of its first row up to `batch_size`, so every call of
    the compiled function sees the same shapes and the graph is traced once.
    """
    for start in range(0, len(features), batch_size):
        chunk = features[start : start + batch_size]
        rows = chunk + [chunk[0]] * (batch_size - len(chunk))
        yield (
            chunk,
            {
                "input_ids": np.asarray([f.input_ids for f in rows], np.int32),
                "input_mask": np.asarray([f.input_mask for f in rows], np.int32),
                "segment_ids": np.asarray([f.segment_ids for f in rows], np.int32),
            },
        )


def extract_layers(model, features, layer_indexes, batch_size, jit_compile=False):
    """Runs a `BertModel` in inference mode and yields the requested encoder layers.

    Args:
        model: a `modeling.BertModel`.
        features: list of `data.features.InputFeatures`, all of one padded length S.
        layer_indexes: Python indexes into `all_encoder_layers` (-1 = last).
        batch_size: examples per call.
        jit_compile: compile the forward pass with XLA.

    Yields:
        (feature, list of float32 arrays `[S, H]`, one per index in `layer_indexes`), in input
        order.
    """

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def forward(inputs):
        layers = model(inputs, training=False)["all_encoder_layers"]
        return [layers[i] for i in layer_indexes]

    for chunk, inputs in iterate_batches(features, batch_size):
        outputs = [o.numpy() for o in forward(inputs)]
        for row, feature in enumerate(chunk):
            yield feature, [o[row] for o in outputs]
