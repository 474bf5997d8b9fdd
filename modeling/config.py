"""BertConfig: the model hyper-parameters, stored as the original `bert_config.json`."""

import copy
import json

from fileio.atomic import write_atomically
from fileio.errors import UserError
from fileio.reading import is_file, open_for_reading

# The activations a config may name; "gelu" is the original release's tanh approximation and
# "gelu_exact" the erf form (see modeling/activations.py).
KNOWN_ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")

_POSITIVE_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


class BertConfig:
    """Hyper-parameters of a BERT encoder, with the original release's JSON field names.

    The 11 fields and their defaults are those of the original `modeling.BertConfig`, so that the
    released `bert_config.json` files load unchanged. Note `type_vocab_size` defaults to 16 in the
    original code although every released checkpoint uses 2.

    Args:
        vocab_size: Size of the WordPiece vocabulary (rows of `word_embeddings`).
        hidden_size: Width H of every Transformer layer.
        num_hidden_layers: Number of Transformer layers L.
        num_attention_heads: Attention heads N per layer; H must be divisible by N.
        intermediate_size: Width I of the feed-forward layer.
        hidden_act: Feed-forward activation, one of `KNOWN_ACTIVATIONS`.
        hidden_dropout_prob: Dropout rate on embeddings and residual branches.
        attention_probs_dropout_prob: Dropout rate on the attention probabilities.
        max_position_embeddings: Rows P of the position table (longest sequence).
        type_vocab_size: Rows T of the token-type (segment) table.
        initializer_range: Standard deviation of the truncated-normal initializer.
    """

    def __init__(
        self,
        vocab_size,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=16,
        initializer_range=0.02,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range

    @classmethod
    def from_dict(cls, json_object):
        """Builds a config from a dict; like the original, unknown keys are kept silently.

        Released multilingual configs carry extra keys (`directionality`, `pooler_*`) that the
        model ignores, so accepting them is part of loading those files unchanged.
        """
        config = cls(vocab_size=None)
        for key, value in json_object.items():
            config.__dict__[key] = value
        return config

    @classmethod
    def from_json_file(cls, json_file):
        """Reads a `bert_config.json` (local path or any tf.io.gfile URL).

        Raises:
            ValueError: if the file is missing, damaged (empty, not UTF-8, not JSON, not an
                object, no vocab_size) or holds a value no model can use (see `validate`).
        """
        if not is_file(json_file):
            raise ValueError(
                f"bert_config file not found: {json_file}. Pass --bert_config_file pointing to "
                "the bert_config.json that came with the checkpoint."
            )
        with open_for_reading(json_file, binary=True) as reader:
            raw = reader.read()
        fix = "restore the bert_config.json that came with the checkpoint"
        if not raw.strip():
            raise UserError(f"{json_file} is empty (damaged or truncated?): {fix}.")
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise UserError(
                f"{json_file} is not UTF-8 text (byte {err.start}): it is damaged or not a "
                f"bert_config.json; {fix}."
            ) from None
        except json.JSONDecodeError as err:
            raise UserError(
                f"{json_file} is not valid JSON (line {err.lineno}, column {err.colno}: "
                f"{err.msg}); if it is damaged or truncated, {fix}. It should hold one object "
                'such as {"vocab_size": 30522, "hidden_size": 768, ...}.'
            ) from None
        if not isinstance(data, dict):
            raise ValueError(f"{json_file} must hold a JSON object, found {type(data).__name__}.")
        if "vocab_size" not in data:
            raise UserError(f'{json_file} has no "vocab_size" (truncated or not a config?): {fix}.')
        config = cls.from_dict(data)
        try:
            return config.validate()
        except ValueError as err:
            # The same check as the model's, here where the file is known.
            raise UserError(f"{json_file}: {str(err).removeprefix('bert_config: ')}") from None

    def to_dict(self):
        """Returns a deep copy of every field, extra keys included."""
        return copy.deepcopy(self.__dict__)

    def to_json_string(self):
        """Serialises the config as the original does: indent 2, sorted keys, final newline."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file):
        """Writes `to_json_string()` to `json_file`, atomically."""
        write_atomically(json_file, self.to_json_string())

    def validate(self):
        """Checks the values a model needs; called by `BertModel`.

        Raises:
            ValueError: naming the first bad field, its value and what is expected.
        """
        for name in _POSITIVE_INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"bert_config: {name} must be a positive integer, got {value!r}.")
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"bert_config: the hidden size ({self.hidden_size}) is not a multiple of the "
                f"number of attention heads ({self.num_attention_heads})."
            )
        act = self.hidden_act
        if not callable(act) and (not isinstance(act, str) or act.lower() not in KNOWN_ACTIVATIONS):
            raise ValueError(
                f"bert_config: unsupported hidden_act {act!r}; use one of {list(KNOWN_ACTIVATIONS)}"
                ' ("gelu" is the original tanh approximation, "gelu_exact" the erf form).'
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"bert_config: {name} must be in [0, 1), got {value!r}.")
        if not isinstance(self.initializer_range, (int, float)) or self.initializer_range <= 0:
            raise ValueError(
                f"bert_config: initializer_range must be positive, got {self.initializer_range!r}."
            )
        return self

    def check_max_seq_length(self, max_seq_length):
        """Raises the original's error when inputs would be longer than the position table,
        its words followed by the flag to change (every runner calls it --max_seq_length).

        Raises:
            ValueError: if `max_seq_length > max_position_embeddings`.
        """
        if max_seq_length > self.max_position_embeddings:
            # The original's words first: scripts may look for them.
            raise ValueError(
                f"Cannot use sequence length {max_seq_length} because the BERT model was only "
                f"trained up to sequence length {self.max_position_embeddings}: pass "
                f"--max_seq_length={self.max_position_embeddings} or less "
                "(max_position_embeddings in --bert_config_file)."
            )
        return self

    def __eq__(self, other):
        return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"BertConfig({self.to_dict()})"
