"""The one table of Hugging Face BERT names: Google's checkpoint names <-> transformers' names.

`NAMES` is read both ways: `original_to_hf` writes an HF folder's tensors (`hf_export`) and
`hf_to_original_names` reads them back (`hf_import`). A fine-tuned task head adds its own two
names (`modeling.formats.task_heads`); `ACTIVATIONS` pairs the `hidden_act` values the same way.
This module is TensorFlow-free.
"""

import re
from typing import NamedTuple

import numpy as np

from modeling.formats import task_heads

# Stand-ins in `NAMES`, each the same on both sides ("/" in Google's names, "." in HF's).
_PLACEHOLDERS = {
    "layer": None,  # an encoder layer's number
    "qkv": ("query", "key", "value"),
    "dense": ("attention/output", "intermediate", "output"),  # a layer's blocks with a dense
    "norm": ("attention/output", "output"),  # a layer's blocks with a LayerNorm
}
# An encoder layer's scope on each side.
_LAYER, _HF_LAYER = "bert/encoder/layer_{layer}/", "encoder.layer.{layer}."

# (Google name, HF name, transposed). The `bert/` names are those of HF's `BertModel`; a class
# with heads holds them under `bert.`. torch.nn.Linear stores a dense kernel [out, in], the
# original [in, out]: those are transposed.
NAMES = (
    ("bert/embeddings/word_embeddings", "embeddings.word_embeddings.weight", False),
    ("bert/embeddings/token_type_embeddings", "embeddings.token_type_embeddings.weight", False),
    ("bert/embeddings/position_embeddings", "embeddings.position_embeddings.weight", False),
    ("bert/embeddings/LayerNorm/gamma", "embeddings.LayerNorm.weight", False),
    ("bert/embeddings/LayerNorm/beta", "embeddings.LayerNorm.bias", False),
    (_LAYER + "attention/self/{qkv}/kernel", _HF_LAYER + "attention.self.{qkv}.weight", True),
    (_LAYER + "attention/self/{qkv}/bias", _HF_LAYER + "attention.self.{qkv}.bias", False),
    (_LAYER + "{dense}/dense/kernel", _HF_LAYER + "{dense}.dense.weight", True),
    (_LAYER + "{dense}/dense/bias", _HF_LAYER + "{dense}.dense.bias", False),
    (_LAYER + "{norm}/LayerNorm/gamma", _HF_LAYER + "{norm}.LayerNorm.weight", False),
    (_LAYER + "{norm}/LayerNorm/beta", _HF_LAYER + "{norm}.LayerNorm.bias", False),
    ("bert/pooler/dense/kernel", "pooler.dense.weight", True),
    ("bert/pooler/dense/bias", "pooler.dense.bias", False),
    ("cls/predictions/transform/dense/kernel", "cls.predictions.transform.dense.weight", True),
    ("cls/predictions/transform/dense/bias", "cls.predictions.transform.dense.bias", False),
    (
        "cls/predictions/transform/LayerNorm/gamma",
        "cls.predictions.transform.LayerNorm.weight",
        False,
    ),
    ("cls/predictions/transform/LayerNorm/beta", "cls.predictions.transform.LayerNorm.bias", False),
    ("cls/predictions/output_bias", "cls.predictions.bias", False),
    # nn.Linear(H, 2) is [2, H], which is how the original stores this one too.
    ("cls/seq_relationship/output_weights", "cls.seq_relationship.weight", False),
    ("cls/seq_relationship/output_bias", "cls.seq_relationship.bias", False),
)
# HF tensors that are no parameters of their own: a buffer of position numbers, and the
# masked LM's decoder, tied to the word embeddings and to `cls.predictions.bias`.
IGNORED = (
    "embeddings.position_ids",
    "cls.predictions.decoder.weight",
    "cls.predictions.decoder.bias",
)
# Older checkpoints (pytorch-pretrained-bert's, transformers' predecessor) call LayerNorm's
# parameters gamma and beta; they are read as weight and bias.
_OLD_LAYER_NORM = {".LayerNorm.gamma": ".LayerNorm.weight", ".LayerNorm.beta": ".LayerNorm.bias"}
_PREFIX = "bert."

# (this project's hidden_act, the HF name written, other HF names read as it). HF's "gelu" is
# the exact erf form; "gelu_new" and its aliases the original's tanh approximation.
ACTIVATIONS = (
    ("gelu", "gelu_new", ("gelu_fast", "gelu_pytorch_tanh")),
    ("gelu_exact", "gelu", ("gelu_python",)),
    ("relu", "relu", ()),
    ("tanh", "tanh", ()),
    ("linear", "linear", ()),
)
TO_HF_ACTIVATION = {ours: theirs for ours, theirs, _ in ACTIVATIONS}
FROM_HF_ACTIVATION = {
    hf: ours for ours, theirs, aliases in ACTIVATIONS for hf in (theirs, *aliases)
}


def _pattern(name, separator):
    """The regex of a table name: its stand-ins as named groups, the rest literal."""
    pieces = re.split(r"\{(\w+)\}", name)
    for i in range(1, len(pieces), 2):
        values = _PLACEHOLDERS[pieces[i]]
        choices = (
            r"\d+"
            if values is None
            else "|".join(re.escape(v.replace("/", separator)) for v in values)
        )
        pieces[i] = f"(?P<{pieces[i]}>{choices})"
    pieces[::2] = [re.escape(piece) for piece in pieces[::2]]
    return re.compile("".join(pieces))


class _Rule(NamedTuple):
    """One row of `NAMES` (or a task head's name), matched either way."""

    original: str
    hf: str
    transposed: bool
    original_pattern: re.Pattern
    hf_pattern: re.Pattern

    @classmethod
    def of(cls, original, hf, transposed):
        return cls(original, hf, transposed, _pattern(original, "/"), _pattern(hf, "."))

    def to_hf(self, name):
        """The HF name of the original `name`, or None where this rule does not match it."""
        match = self.original_pattern.fullmatch(name)
        if match is None:
            return None
        return self.hf.format(**{k: v.replace("/", ".") for k, v in match.groupdict().items()})

    def to_original(self, name):
        """The original name of the HF `name`, or None where this rule does not match it."""
        match = self.hf_pattern.fullmatch(name)
        if match is None:
            return None
        return self.original.format(
            **{k: v.replace(".", "/") for k, v in match.groupdict().items()}
        )


_RULES = tuple(_Rule.of(*row) for row in NAMES)


def _rules(head):
    """The table's rules and, with a task head, its two names (both layouts store [out, in])."""
    if head is None:
        return _RULES
    pairs = zip(head.names, head.hf_names, strict=True)
    return _RULES + tuple(_Rule.of(ours, theirs, False) for ours, theirs in pairs)


def _renamed(name, rules, direction):
    """(the other side's name, transposed) of `name` by the first rule that matches, or None.

    `direction` is `_Rule.to_hf` or `_Rule.to_original`."""
    for rule in rules:
        renamed = direction(rule, name)
        if renamed is not None:
            return renamed, rule.transposed
    return None


def _float32(value, transpose):
    array = np.asarray(value, dtype=np.float32)
    return np.ascontiguousarray(array.T if transpose else array)


def _has_any_head(arrays, head):
    """Whether the HF class holds a head beside the encoder (a pretraining head or the task head
    `head`), so that it keeps the encoder under `bert.`."""
    return head is not None or any(name.startswith("cls/") for name in arrays)


def original_to_hf(arrays):
    """Renames (and transposes) original arrays into HF BERT tensor names.

    Encoder-only weights get `BertModel` names; with the pretraining heads or a task head, the
    names of the class holding them, its encoder under `bert.` (`BertForPreTraining`,
    `BertForSequenceClassification`, ...).

    Args:
        arrays: dict original name -> array, as `hf_export.hf_arrays` leaves them.

    Returns:
        dict HF name -> float32 np.ndarray (C-contiguous).

    Raises:
        ValueError: for a name outside the encoder, the pretraining heads and one task head.
    """
    head = task_heads.head_in(arrays)
    rules = _rules(head)
    prefix = _PREFIX if _has_any_head(arrays, head) else ""
    out = {}
    for name, value in arrays.items():
        renamed = _renamed(name, rules, _Rule.to_hf)
        if renamed is None:
            raise ValueError(
                f"{name} has no Hugging Face BERT equivalent: the encoder, the pretraining heads "
                "and one task head (modeling.formats.task_heads) convert."
            )
        target, transpose = renamed
        out[(prefix if name.startswith("bert/") else "") + target] = _float32(value, transpose)
    return out


def hf_to_original_names(tensors, head=None):
    """Renames (and transposes) HF BERT tensors into the original checkpoint layout.

    Accepts bare `BertModel` names and `bert.`-prefixed ones (`BertForPreTraining` ...).

    Args:
        tensors: dict HF name -> np.ndarray.
        head: the `task_heads.TaskHead` whose HF names the tensors hold (`task_heads.hf_head_of`
            tells it from `config.json`), or None.

    Returns:
        dict original name -> float32 np.ndarray.

    Raises:
        ValueError: listing every HF tensor that has no original equivalent.
    """
    rules = _rules(head)
    out, unknown = {}, []
    for hf_name, value in tensors.items():
        name = hf_name.removeprefix(_PREFIX)
        if name in IGNORED:
            continue
        for old, new in _OLD_LAYER_NORM.items():
            if name.endswith(old):
                name = name[: -len(old)] + new
        renamed = _renamed(name, rules, _Rule.to_original)
        if renamed is None:
            unknown.append(f"  {hf_name} {list(value.shape)}")
            continue
        target, transpose = renamed
        out[target] = _float32(value, transpose)
    if unknown:
        raise ValueError(
            "HF weights hold tensors with no original BERT equivalent:\n" + "\n".join(unknown)
        )
    return out
