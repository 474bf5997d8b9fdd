"""A smaller student taken from a teacher's own layers: its config and its checkpoint arrays.

The student keeps the teacher's embeddings, pooler and task head, and the encoder layers named
by `layers` (teacher layer indices, from 0, ascending), renumbered from 0: student layer `i` is
teacher layer `layers[i]` (`bert/encoder/layer_{layers[i]}/...` becomes
`bert/encoder/layer_{i}/...`). Also which of the student's hidden states a hidden-state loss
matches to which of the teacher's (`parse_layer_map`). TensorFlow-free: names and arrays only.
"""

import re

from fileio.errors import UserError

_LAYER = re.compile(r"^bert/encoder/layer_(\d+)/(.*)$")


def parse_layers(text, num_teacher_layers):
    """The teacher layers of `--student_layers`, e.g. "1,3,5" -> (1, 3, 5).

    Raises:
        UserError: not a comma-separated list of distinct ascending layer indices of the
            teacher.
    """
    try:
        layers = tuple(int(part) for part in text.split(","))
    except ValueError:
        layers = ()
    last = num_teacher_layers - 1
    if not layers or list(layers) != sorted(set(layers)) or layers[0] < 0 or layers[-1] > last:
        raise UserError(
            f"--student_layers={text} is not a list of the teacher's layers: pass distinct "
            f"layer indices from 0 to {last} in ascending order, separated by commas (e.g. "
            f"--student_layers={','.join(str(i) for i in range(1, last + 1, 2))})."
        )
    return layers


def student_config_dict(teacher_config, layers):
    """The student's bert_config.json dict: the teacher's with `len(layers)` layers.

    Args:
        teacher_config: the teacher's config as a dict (`BertConfig.to_dict()`).
        layers: teacher layer indices.
    """
    return {**teacher_config, "num_hidden_layers": len(layers)}


def student_arrays(teacher_arrays, layers):
    """The student's checkpoint arrays from the teacher's (original names, heads included).

    Args:
        teacher_arrays: dict original name -> array (optimizer state left out).
        layers: teacher layer indices.

    Returns:
        dict original name -> array: every array outside the encoder layers as it is, and the
        arrays of teacher layer `layers[i]` under student layer `i`.
    """
    new_index = {teacher: student for student, teacher in enumerate(layers)}
    arrays = {}
    for name, value in teacher_arrays.items():
        match = _LAYER.match(name)
        if match is None:
            arrays[name] = value
        elif int(match.group(1)) in new_index:
            arrays[f"bert/encoder/layer_{new_index[int(match.group(1))]}/{match.group(2)}"] = value
    return arrays


# The hidden states a layer map pairs are numbered as `BertModel`'s: 0 the embeddings' output,
# k the output of layer k - 1.
EMBEDDINGS = "embeddings"


def even_layer_map(num_student_layers, num_teacher_layers):
    """The default pairs of hidden states: the embeddings with the embeddings, and student layer
    i with teacher layer round((i + 1) * T / S) - 1 (rounded half up), evenly spaced and the
    last with the last (TinyBERT's uniform map).

    Returns:
        tuple of (student, teacher) hidden-state numbers (0 the embeddings, k layer k - 1).
    """
    s, t = num_student_layers, num_teacher_layers
    return ((0, 0), *((i + 1, (2 * (i + 1) * t + s) // (2 * s)) for i in range(s)))


def _map_text(pairs):
    def name(k):
        return EMBEDDINGS if k == 0 else str(k - 1)

    return ",".join(f"{name(s)}:{name(t)}" for s, t in pairs)


def parse_layer_map(text, num_student_layers, num_teacher_layers):
    """The pairs of `--hidden_layer_map`, e.g. "embeddings:embeddings,0:1,1:3" ->
    ((0, 0), (1, 2), (2, 4)), or the even map (`even_layer_map`) where `text` is empty.

    Args:
        text: student:teacher pairs of layers counted from 0, or `embeddings:embeddings`.
        num_student_layers: S.
        num_teacher_layers: T.

    Returns:
        tuple of (student, teacher) hidden-state numbers (0 the embeddings, k layer k - 1).

    Raises:
        UserError: a pair that is no student:teacher pair of their layers, the embeddings
            paired with a layer, or a student layer paired twice.
    """
    default = even_layer_map(num_student_layers, num_teacher_layers)
    if not text:
        return default
    pairs = []

    def number(side, value, count):
        if value == EMBEDDINGS:
            return 0
        if not value.isdigit() or int(value) >= count:
            raise ValueError(f"{value!r} is no {side} layer (0 to {count - 1}, or {EMBEDDINGS})")
        return int(value) + 1

    try:
        for part in text.split(","):
            student, colon, teacher = part.strip().partition(":")
            if not colon:
                raise ValueError(f"{part!r} is no student:teacher pair")
            pair = (
                number("student", student.strip(), num_student_layers),
                number("teacher", teacher.strip(), num_teacher_layers),
            )
            if (pair[0] == 0) != (pair[1] == 0):
                raise ValueError(f"{part!r} pairs the embeddings with a layer")
            if pair[0] in [s for s, _ in pairs]:
                raise ValueError(f"student {student.strip()} is paired twice")
            pairs.append(pair)
    except ValueError as err:
        raise UserError(
            f"--hidden_layer_map={text} cannot be used: {err}; pass student:teacher pairs of "
            f"layers counted from 0, e.g. --hidden_layer_map={_map_text(default)} (the "
            "default)."
        ) from None
    return tuple(pairs)
