"""serving/saved_model_predictor.py: the answers it returns carry the signature's outputs
unchanged, each under its own name (checked here on outputs as the signatures give them,
without a model; the slow serving tests check them against real exports)."""

import numpy as np

from serving.saved_model_predictor import _ANSWERS


def test_squad_answers_carry_each_output_under_its_name():
    outputs = {
        "answer": np.array([b"in Paris", b""]),
        "start_char": np.array([17, -1], np.int32),
        "end_char": np.array([25, -1], np.int32),
        "score": np.array([3.5, -0.25], np.float32),
        "no_answer_probability": np.array([0.125, 0.75], np.float32),
    }
    assert _ANSWERS["squad"](outputs, 2) == [
        {
            "answer": "in Paris",
            "start_char": 17,
            "end_char": 25,
            "score": 3.5,
            "no_answer_probability": 0.125,
        },
        {
            "answer": "",
            "start_char": -1,
            "end_char": -1,
            "score": -0.25,
            "no_answer_probability": 0.75,
        },
    ]


def test_ner_answers_keep_each_examples_words_and_tags():
    outputs = {
        "words": np.array([[b"Ada", b"Lovelace", b""], [b"Paris", b"", b""]]),
        "tags": np.array([[b"B-PER", b"I-PER", b""], [b"B-LOC", b"", b""]]),
        "num_words": np.array([2, 1], np.int32),
    }
    assert _ANSWERS["ner"](outputs, 2) == [
        {"words": ["Ada", "Lovelace"], "tags": ["B-PER", "I-PER"]},
        {"words": ["Paris"], "tags": ["B-LOC"]},
    ]
