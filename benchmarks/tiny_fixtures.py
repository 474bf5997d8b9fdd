"""The tiny synthetic fixtures of the dry runs (and of the tests, which import them): the
original modeling_test's model sizes, a learnable sentiment task in SST-2's files and learnable
pre-training records in create_pretraining_data's format."""

import os
import random

from benchmarks.datasets import write_rows

# The tiny fixtures: the original modeling_test's sizes, 2 layers.
TINY_CONFIG = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    type_vocab_size=2,
)
NOUNS = ["movie", "film", "story", "plot", "cast", "script", "show", "ending", "music", "book"]
GOOD = ["wonderful", "great", "brilliant", "moving", "delightful", "superb", "charming"]
BAD = ["terrible", "dull", "awful", "boring", "tedious", "clumsy", "dreadful"]
FRAMES = [
    "the {n} was {a} .",
    "a {a} {n} , really .",
    "i thought the {n} was {a}",
    "what a {a} {n} !",
    "honestly , the {n} is {a} and it shows .",
]


def write_tiny_sst2(folder, num_train, num_dev, num_test, seed=0):
    """A small learnable sentiment task in SST-2's files (good or bad adjectives in frames)."""
    rng = random.Random(seed)

    def sentence():
        label = rng.randint(0, 1)
        adjective = rng.choice(GOOD if label else BAD)
        return rng.choice(FRAMES).format(n=rng.choice(NOUNS), a=adjective), label

    os.makedirs(folder, exist_ok=True)
    for name, count in (("train", num_train), ("dev", num_dev)):
        write_rows(
            f"{folder}/{name}.tsv", ("sentence", "label"), [sentence() for _ in range(count)]
        )
    tests = [(i, sentence()[0]) for i in range(num_test)]
    write_rows(f"{folder}/test.tsv", ("index", "sentence"), tests)


def write_examples(path, examples):
    """Writes `examples`, dicts of {feature: ints or floats}, as a TFRecord file of
    tf.train.Examples (a float feature is a FloatList, any other an Int64List)."""
    import numpy as np
    import tensorflow as tf

    def feature(values):
        values = np.atleast_1d(values)
        if values.dtype.kind == "f":
            return tf.train.Feature(float_list=tf.train.FloatList(value=values.tolist()))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values.tolist()))

    with tf.io.TFRecordWriter(str(path)) as writer:
        for example in examples:
            features = tf.train.Features(feature={k: feature(v) for k, v in example.items()})
            writer.write(tf.train.Example(features=features).SerializeToString())


def write_pretraining_records(path, num_examples=256, seq_length=32, max_predictions=5, seed=0):
    """Learnable pretraining TFRecords of `TINY_CONFIG`'s vocabulary in create_pretraining_data's
    format: the A segment repeats one token (a masked token is a copy of its neighbours), the B
    segment repeats it too (IsNext, label 0) or is random (label 1); some examples mask fewer
    than `max_predictions` tokens, so masked_lm_weights vary."""
    import numpy as np

    rng, vocab, examples = np.random.default_rng(seed), TINY_CONFIG["vocab_size"], []
    for _ in range(num_examples):
        n = int(rng.integers(10, seq_length + 1))
        token = int(rng.integers(5, vocab))
        ids = [1] + [token] * (n - 2) + [2]
        label = int(rng.integers(0, 2))
        half = n // 2
        if label:
            ids = ids[:half] + [int(x) for x in rng.integers(5, vocab, n - half - 1)] + [2]
        count = int(rng.integers(2, max_predictions + 1))
        positions = sorted(int(p) for p in rng.choice(np.arange(1, n - 1), count, False))
        masked_ids = [ids[p] for p in positions]
        for p in positions:
            ids[p] = 3
        pad, pred_pad = seq_length - n, max_predictions - count
        examples.append(
            {
                "input_ids": ids + [0] * pad,
                "input_mask": [1] * n + [0] * pad,
                "segment_ids": [0] * half + [1] * (n - half) + [0] * pad,
                "masked_lm_positions": positions + [0] * pred_pad,
                "masked_lm_ids": masked_ids + [0] * pred_pad,
                "masked_lm_weights": [1.0] * count + [0.0] * pred_pad,
                "next_sentence_labels": [label],
            }
        )
    write_examples(path, examples)
