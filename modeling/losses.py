"""Losses of the original scripts, in float32."""

import tensorflow as tf


def masked_lm_loss(logits, label_ids, label_weights):
    """run_pretraining's masked-LM loss: sum(w * nll) / (sum(w) + 1e-5).

    Args:
        logits: float Tensor `[B * P, V]`.
        label_ids: int Tensor `[B, P]` (or `[B * P]`).
        label_weights: float Tensor `[B, P]`; 0 marks padding predictions.

    Returns:
        (loss scalar, per-prediction loss `[B * P]`).
    """
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    ids = tf.reshape(tf.cast(label_ids, tf.int32), [-1])
    weights = tf.reshape(tf.cast(label_weights, tf.float32), [-1])
    one_hot = tf.one_hot(ids, depth=tf.shape(log_probs)[-1], dtype=tf.float32)
    per_example = -tf.reduce_sum(log_probs * one_hot, axis=-1)
    loss = tf.reduce_sum(weights * per_example) / (tf.reduce_sum(weights) + 1e-5)
    return loss, per_example


def classification_loss(logits, labels):
    """Mean softmax cross-entropy (next-sentence, classifier heads).

    Args:
        logits: float Tensor `[B, C]`.
        labels: int Tensor `[B]` or `[B, 1]`.

    Returns:
        (loss scalar, per-example loss `[B]`).
    """
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    one_hot = tf.one_hot(tf.reshape(tf.cast(labels, tf.int32), [-1]), tf.shape(log_probs)[-1])
    per_example = -tf.reduce_sum(one_hot * log_probs, axis=-1)
    return tf.reduce_mean(per_example), per_example
