"""A smaller student taken from a teacher's own layers: its config and its checkpoint arrays.

The student keeps the teacher's embeddings, pooler and task head, and the encoder layers named
by `layers` (teacher layer indices, from 0, ascending), renumbered from 0: student layer `i` is
teacher layer `layers[i]` (`bert/encoder/layer_{layers[i]}/...` becomes
`bert/encoder/layer_{i}/...`). TensorFlow-free: names and arrays only.
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
