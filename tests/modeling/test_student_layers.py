"""A student made of some of the teacher's layers (modeling/student_layers.py)."""

import numpy as np
import pytest

from fileio.errors import UserError
from modeling.student_layers import parse_layers, student_arrays, student_config_dict


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
