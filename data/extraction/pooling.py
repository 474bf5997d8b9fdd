"""One line's vectors from its per-token layer values: layers combined, then tokens pooled.

The tokens of a line are its real tokens only (no padding ever reaches here), `[CLS]` and
`[SEP]` included, as they are in the JSON output and in bert-as-service's REDUCE_MEAN; `cls`
is the `[CLS]` row (of a windowed line: its first window's).
"""

import numpy as np


def combine_layers(layer_values, layer_combine):
    """The chosen layers of one line as one array.

    Args:
        layer_values: list (one per chosen layer, in `--layers` order) of float arrays
            `[num_tokens, hidden_size]`.
        layer_combine: "concatenate" (side by side, in list order) or "mean".

    Returns:
        float32 array `[num_tokens, width]`: width is hidden_size * layers for "concatenate",
        hidden_size for "mean".
    """
    if layer_combine == "concatenate":
        if len(layer_values) == 1:
            return np.asarray(layer_values[0], np.float32)
        return np.concatenate(layer_values, axis=1).astype(np.float32, copy=False)
    if layer_combine == "mean":
        # float64 sums, so the average does not depend on the order of the layers.
        stacked = np.stack(layer_values).astype(np.float64)
        return stacked.mean(axis=0).astype(np.float32)
    raise ValueError(f"Unknown layer_combine {layer_combine!r}.")


def pool_tokens(values, pooling):
    """Pools one line's token rows.

    Args:
        values: float32 array `[num_tokens, width]` (at least one token: `[CLS]`).
        pooling: "none", "mean", "max", "cls", or "first_last_mean" (a mean; the caller has
            already averaged the first and last layers with `combine_layers`).

    Returns:
        float32 array `[num_tokens, width]` for "none", else `[width]`.
    """
    if pooling == "none":
        return values
    if pooling in ("mean", "first_last_mean"):
        return values.mean(axis=0, dtype=np.float64).astype(np.float32)
    if pooling == "max":
        return values.max(axis=0)
    if pooling == "cls":
        return values[0]
    raise ValueError(f"Unknown pooling {pooling!r}.")
