"""The classifier's multi-label and class-weighted losses (training/tasks.py ClassifierTask)
against the same losses computed by hand in numpy from the model's own logits."""

import numpy as np
import pytest

from tests.helpers.tiny_config import tiny_config
from training.tasks import ClassifierTask


def _features(rng, batch, labels, real=None):
    ids = rng.integers(1, 90, size=(batch, 12)).astype(np.int32)
    features = {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
        "label_ids": labels,
    }
    if real is not None:
        features["is_real_example"] = np.asarray(real, np.int32)
    return features


def _loss(task, features):
    aux = task.forward(features, training=False)
    (numerator,) = task.loss_numerators(aux)
    (weight,) = task.loss_weights(features)
    return aux, float(numerator / weight)


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_class_weights_scale_each_example_and_average_over_examples():
    rng = np.random.default_rng(0)
    weights = np.array([0.5, 3.0, 1.25], np.float32)
    labels = np.array([0, 1, 2, 1, 0], np.int32)
    task = ClassifierTask(tiny_config(), 3, class_weights=weights)
    task.build_model()
    features = _features(rng, 5, labels, real=[1, 1, 1, 1, 0])
    aux, loss = _loss(task, features)
    logits = np.asarray(aux["logits"], np.float64)
    by_hand = -_log_softmax(logits)[np.arange(5), labels] * weights[labels]
    real = np.array([1, 1, 1, 1, 0], bool)
    # Keras' class_weight: each example's loss times its class's weight, mean over the batch's
    # real examples (the padding example counts for nothing).
    assert loss == pytest.approx(by_hand[real].mean(), rel=1e-5)
    unweighted = ClassifierTask(tiny_config(), 3)
    unweighted.build_model()
    unweighted.model.set_weights(task.model.get_weights())
    _, plain = _loss(unweighted, features)
    assert plain == pytest.approx((-_log_softmax(logits)[np.arange(5), labels])[real].mean(), 1e-5)
    assert plain != pytest.approx(loss, rel=1e-3)


@pytest.mark.parametrize("positive_weights", [None, np.array([1.0, 4.0, 0.5, 2.0], np.float32)])
def test_multi_label_loss_is_binary_cross_entropy_per_label(positive_weights):
    rng = np.random.default_rng(1)
    targets = rng.integers(0, 2, size=(6, 4)).astype(np.int32)
    task = ClassifierTask(tiny_config(), 4, multi_label=True, class_weights=positive_weights)
    task.build_model()
    aux, loss = _loss(task, _features(rng, 6, targets))
    logits = np.asarray(aux["logits"], np.float64)
    p = 1.0 / (1.0 + np.exp(-logits))
    w = np.ones(4) if positive_weights is None else positive_weights
    by_hand = -(w * targets * np.log(p) + (1 - targets) * np.log(1 - p))
    np.testing.assert_allclose(aux["predictions"], p, rtol=1e-5)
    np.testing.assert_allclose(aux["per_example_loss"], by_hand.mean(-1), rtol=1e-5)
    assert loss == pytest.approx(by_hand.mean(), rel=1e-5)
