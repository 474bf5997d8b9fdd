"""Input checks and safe ratios shared by the classification modules."""

import numpy as np


def safe_divide(numerator, denominator):
    """`numerator / denominator` elementwise as float64, 0.0 where the denominator is 0 (as
    scikit-learn's zero_division=0)."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def binary_matrix(values, name, num_labels=None):
    """`values` as an int64 {0,1} matrix [N, C], or a ValueError saying what is wrong.

    Args:
        values: array-like [N, C] of 0/1 (ints, bools or floats equal to 0 or 1).
        name: what the values are, for the message ("predicted", "targets").
        num_labels: C if known (the number of labels).
    """
    array = np.asarray(values)
    if array.ndim != 2:
        raise ValueError(
            f"{name} has shape {array.shape}; it must be a 2-D example x label matrix [N, C]."
        )
    if num_labels is not None and array.shape[1] != num_labels:
        raise ValueError(
            f"{name} has {array.shape[1]} columns for {num_labels} labels; it must be an "
            "example x label matrix [N, C] with one column per label."
        )
    if array.size and not np.all((array == 0) | (array == 1)):
        raise ValueError(f"{name} holds values other than 0 and 1; it must be a multi-hot matrix.")
    return array.astype(np.int64)


def probability_matrix(values, name="probabilities"):
    """`values` as a float64 matrix [N, C] of numbers in [0, 1], or a ValueError."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(
            f"{name} has shape {array.shape}; it must be a 2-D example x label matrix [N, C]."
        )
    if array.size and not (np.all(array >= 0.0) and np.all(array <= 1.0)):
        raise ValueError(f"{name} holds values outside [0, 1] (or NaN); pass sigmoid outputs.")
    return array


def same_shape(first, second, first_name, second_name):
    """Raises a ValueError unless the two arrays have the same shape."""
    if first.shape != second.shape:
        raise ValueError(
            f"{first_name} has shape {first.shape} but {second_name} has shape "
            f"{second.shape}; they must be the same example x label matrix [N, C]."
        )


def class_ids(values, name, num_labels):
    """`values` as an int64 vector [N] of class ids in [0, num_labels), or a ValueError."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} has shape {array.shape}; it must be a vector [N] of class ids.")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        if not np.all(np.mod(array, 1) == 0):
            raise ValueError(f"{name} holds non-integer values; it must hold class ids.")
    array = array.astype(np.int64)
    if array.size and (array.min() < 0 or array.max() >= num_labels):
        raise ValueError(
            f"{name} holds class ids outside [0, {num_labels}); there are {num_labels} labels."
        )
    return array
