"""A student made of some of the teacher's layers, and the map of its hidden states to the
teacher's (modeling/student_layers.py)."""

import numpy as np
import pytest

from fileio.errors import UserError
from modeling.student_layers import (
    even_layer_map,
    parse_layer_map,
    parse_layers,
    student_arrays,
    student_config_dict,
)


def test_parse_layers():
    assert parse_layers("1,3,5", 6) == (1, 3, 5)
    assert parse_layers("0", 2) == (0,)
    for bad in ("", "a", "3,1", "1,1", "6", "-1,2"):
        with pytest.raises(UserError, match="--student_layers"):
            parse_layers(bad, 6)


def test_student_arrays_are_the_teachers_at_those_layers():
    rng = np.random.default_rng(0)
    names = ["attention/self/query/kernel", "output/LayerNorm/gamma"]
    teacher = {f"bert/encoder/layer_{i}/{n}": rng.normal(size=3) for i in range(4) for n in names}
    teacher.update(
        {
            "bert/embeddings/word_embeddings": rng.normal(size=(5, 3)),
            "bert/pooler/dense/kernel": rng.normal(size=(3, 3)),
            "output_weights": rng.normal(size=(2, 3)),
        }
    )
    student = student_arrays(teacher, (1, 3))
    for i, t in enumerate((1, 3)):
        for n in names:
            assert student[f"bert/encoder/layer_{i}/{n}"] is teacher[f"bert/encoder/layer_{t}/{n}"]
    assert not any(
        name.startswith(("bert/encoder/layer_2", "bert/encoder/layer_3")) for name in student
    )
    for name in ("bert/embeddings/word_embeddings", "bert/pooler/dense/kernel", "output_weights"):
        assert student[name] is teacher[name]
    assert student_config_dict({"num_hidden_layers": 4, "hidden_size": 3}, (1, 3)) == {
        "num_hidden_layers": 2,
        "hidden_size": 3,
    }


def test_even_layer_map():
    """Student layer i to teacher layer round((i + 1) * T / S) - 1, rounded half up; hidden
    states numbered from the embeddings (0)."""
    assert even_layer_map(3, 6) == ((0, 0), (1, 2), (2, 4), (3, 6))  # layers 1, 3, 5
    assert even_layer_map(4, 6) == ((0, 0), (1, 2), (2, 3), (3, 5), (4, 6))  # 1, 2, 4, 5
    assert even_layer_map(2, 3) == ((0, 0), (1, 2), (2, 3))  # 1, 2
    assert even_layer_map(4, 4) == tuple((k, k) for k in range(5))
    assert even_layer_map(1, 12) == ((0, 0), (1, 12))


def test_parse_layer_map():
    assert parse_layer_map(None, 2, 4) == even_layer_map(2, 4)
    assert parse_layer_map("0:1, 1:3", 2, 4) == ((1, 2), (2, 4))
    assert parse_layer_map("embeddings:embeddings,1:0", 2, 4) == ((0, 0), (2, 1))
    for bad, problem in (
        ("0:4", "'4' is no teacher layer (0 to 3"),
        ("2:0", "'2' is no student layer (0 to 1"),
        ("0", "'0' is no student:teacher pair"),
        ("-1:0", "'-1' is no student layer"),
        ("embeddings:3", "pairs the embeddings with a layer"),
        ("0:1,0:2", "student 0 is paired twice"),
    ):
        with pytest.raises(UserError) as err:
            parse_layer_map(bad, 2, 4)
        message = str(err.value)
        assert (
            message.startswith(f"--hidden_layer_map={bad} cannot be used: ") and problem in message
        )
        assert message.endswith(
            "pass student:teacher pairs of layers counted from 0, e.g. "
            "--hidden_layer_map=embeddings:embeddings,0:1,1:3 (the default)."
        )
