"""data/classification/class_weights.py against scikit-learn (used here only)."""

import numpy as np
import pytest
from sklearn.utils.class_weight import compute_class_weight

from data.classification.class_weights import (
    balanced_class_weights,
    balanced_positive_weights,
    parse_class_weights,
)

LABELS = ["neg", "neutral", "pos"]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("size,num_classes", [(3, 3), (50, 4), (1000, 7)])
def test_balanced_class_weights_match_sklearn(seed, size, num_classes):
    rng = np.random.default_rng(seed)
    ids = np.r_[np.arange(num_classes), rng.integers(0, num_classes, size)]
    ids = ids[ids < num_classes - 1] if seed == 3 else ids  # one class rarer... or missing
    labels = [str(c) for c in range(num_classes)]
    if seed == 3:
        with pytest.raises(ValueError, match=f"Class '{num_classes - 1}'"):
            balanced_class_weights(ids, labels)
        return
    weights = balanced_class_weights(ids, labels)
    expected = compute_class_weight("balanced", classes=np.arange(num_classes), y=ids)
    np.testing.assert_allclose(weights, expected, rtol=1e-12)


def test_a_class_without_examples_is_named():
    with pytest.raises(ValueError) as raised:
        balanced_class_weights([0, 0, 2], LABELS)
    message = str(raised.value)
    assert "'neutral' (class id 1) has no training example" in message
    assert "--class_weights with explicit numbers" in message
    with pytest.raises(ValueError, match=r"outside \[0, 3\)"):
        balanced_class_weights([0, 3], LABELS)


def test_balanced_positive_weights():
    multi_hot = np.array([[1, 0, 1], [0, 1, 1], [0, 0, 1], [1, 0, 0]])
    weights = balanced_positive_weights(multi_hot, LABELS)
    assert weights.tolist() == [2 / 2, 3 / 1, 1 / 3]
    rng = np.random.default_rng(0)
    multi_hot = (rng.random((500, 6)) < [0.05, 0.1, 0.3, 0.5, 0.7, 0.9]).astype(np.int64)
    positives = multi_hot.sum(axis=0)
    expected = (500 - positives) / positives
    np.testing.assert_allclose(balanced_positive_weights(multi_hot, list("abcdef")), expected)


@pytest.mark.parametrize("column,which", [([0, 0, 0], "positive"), ([1, 1, 1], "negative")])
def test_a_label_without_positives_or_negatives_is_named(column, which):
    multi_hot = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0]])
    multi_hot[:, 1] = column
    with pytest.raises(ValueError) as raised:
        balanced_positive_weights(multi_hot, LABELS)
    message = str(raised.value)
    assert f"'neutral' (class id 1) has no {which} training example" in message
    assert "--class_weights with explicit numbers" in message
    with pytest.raises(ValueError, match="columns for 3 labels"):
        balanced_positive_weights(multi_hot[:, :2], LABELS)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", None),
        (None, None),
        ("none", None),
        (" None ", None),
        ("balanced", "balanced"),
        ("1,3.5,0.25", [1.0, 3.5, 0.25]),
        (" 1.0 , 2 ,1e-3 ", [1.0, 2.0, 0.001]),
    ],
)
def test_parse_class_weights(text, expected):
    assert parse_class_weights(text, LABELS) == expected


@pytest.mark.parametrize(
    "text,problem",
    [
        ("1,2", "gives 2 weights for 3 labels"),
        ("1,2,3,4", "gives 4 weights for 3 labels"),
        ("1,x,3", "'x' is not a number"),
        ("1,,3", "'' is not a number"),
        ("1,0,3", "'0' is not a positive number"),
        ("1,-2,3", "'-2' is not a positive number"),
        ("1,nan,3", "'nan' is not a positive number"),
        ("1,inf,3", "'inf' is not a positive number"),
        ("balance", "'balance' is not a number"),
    ],
)
def test_bad_class_weights_are_refused(text, problem):
    with pytest.raises(ValueError) as raised:
        parse_class_weights(text, LABELS)
    message = str(raised.value)
    assert message.startswith(f"--class_weights={text!r}")
    assert problem in message
    assert "3 positive numbers separated by commas" in message
    assert "('neg', 'neutral', 'pos')" in message


def test_many_labels_are_listed_in_part():
    labels = [f"l{c}" for c in range(60)]
    with pytest.raises(ValueError, match="'l49' and 10 more"):
        parse_class_weights("1,2", labels)
