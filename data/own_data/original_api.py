"""The original's module names for a processor file written against run_classifier.py.

Users of the original wrote `DataProcessor` subclasses in a file of their own that imports
`run_classifier` and `tokenization` (or `bert.run_classifier` and `bert.tokenization`) and uses a
few of their names. `original_modules()` builds stand-ins for those modules from this project's
classes and functions, so such a file runs unchanged while `load_processor`
(`data/own_data/processor_file.py`) loads it.

`UserProcessor` is the `DataProcessor` those files subclass: the project's base class with the
defaults that the runner needs and an original processor does not define.

TensorFlow-free: the runner loads the file while it checks its flags, before TensorFlow loads.
"""

import functools
import inspect
import sys
import types

from data.glue.processor_base import DataProcessor, InputExample, PaddingInputExample
from data.tokenization import full_tokenizer
from fileio.errors import UserError
from fileio.reading import is_file

# The readers a processor file overrides; their results tell whether the task has pairs.
_READERS = ("get_train_examples", "get_dev_examples", "get_test_examples")


def _noting_pairs(read):
    """Wraps a processor's example reader so that the processor notes sentence pairs."""

    @functools.wraps(read)
    def reader(self, *args, **kwargs):
        examples = read(self, *args, **kwargs)
        if isinstance(examples, list | tuple) and any(
            getattr(example, "text_b", None) for example in examples
        ):
            self._pairs_seen = True
        return examples

    return reader


class UserProcessor(DataProcessor):
    """The `run_classifier.DataProcessor` of a processor file: an original-style processor.

    A subclass defines `get_train_examples(data_dir)`, `get_dev_examples(data_dir)`,
    `get_test_examples(data_dir)` and `get_labels()` as in the original (each only where the run
    needs it) and may call `self._read_tsv(path, quotechar=None)`. Everything else this
    project's runner asks of a processor has a default here.

    Attributes:
        name: the class name (unless the class sets its own).
        source_file: the file the class was defined in (None if unknown).
        is_regression: False: the original's processors are classifiers.
        has_text_b: True once any example returned by the subclass's
            `get_{train,dev,test}_examples` had a non-empty `text_b` (as `convert_single_example`
            decides, a pair). It is only known after reading, so a runner reads it after the
            sets it uses (the exported model's inputs follow it); assigning it overrides it.
        leaderboard_names: `()`: no GLUE leaderboard files.
    """

    name = "UserProcessor"
    source_file = None
    is_regression = False
    leaderboard_names = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__
        # While a processor file runs, its module is in sys.modules (load_processor puts it
        # there), which tells which file defines the class.
        module = sys.modules.get(cls.__module__)
        cls.source_file = getattr(module, "__file__", None)
        for method in _READERS:
            if inspect.isfunction(cls.__dict__.get(method)):
                setattr(cls, method, _noting_pairs(cls.__dict__[method]))

    @property
    def has_text_b(self):
        return self.__dict__.get("_pairs_seen", False)

    @has_text_b.setter
    def has_text_b(self, value):
        self._pairs_seen = bool(value)

    def _where(self):
        return f"{self.name} ({self.source_file})" if self.source_file else self.name

    def _missing(self, method, use):
        return UserError(
            f"{self._where()} has no {method}: add it to the class to {use}, as the original's "
            "DataProcessor subclasses do."
        )

    def get_train_examples(self, data_dir):
        raise self._missing("get_train_examples(data_dir)", "use --do_train")

    def get_dev_examples(self, data_dir):
        raise self._missing("get_dev_examples(data_dir)", "use --do_eval")

    def get_test_examples(self, data_dir):
        raise self._missing("get_test_examples(data_dir)", "use --do_predict")

    def get_labels(self):
        """Returns the `labels` attribute, for a class that sets it instead of `get_labels`."""
        if not self.labels:
            raise self._missing("get_labels()", "name the classes (in class-id order)")
        return list(self.labels)

    def data_files(self, data_dir, split):
        """Returns `[]`: which files the subclass reads is only known by reading them."""
        return []

    def get_dev_sets(self, data_dir):
        """Returns `{"dev": self.get_dev_examples(data_dir)}`."""
        return {"dev": self.get_dev_examples(data_dir)}

    def get_test_sets(self, data_dir):
        """Returns `{"test": self.get_test_examples(data_dir)}` (no leaderboard name)."""
        return {"test": self.get_test_examples(data_dir)}

    @classmethod
    def _read_numbered(cls, input_file, quotechar=None):
        # The base class's message sends the user to a GLUE download; a user's files are theirs.
        if not is_file(input_file):
            where = f" in {cls.source_file}" if cls.source_file else ""
            raise UserError(
                f"Data file not found: {input_file}: --data_dir must hold the files that "
                f"{cls.name}{where} reads."
            )
        return super()._read_numbered(input_file, quotechar)


# The original tokenization module's public names that this project has (same behaviour).
_TOKENIZATION_NAMES = (
    "BasicTokenizer",
    "FullTokenizer",
    "WordpieceTokenizer",
    "convert_by_vocab",
    "convert_ids_to_tokens",
    "convert_to_unicode",
    "convert_tokens_to_ids",
    "load_vocab",
    "printable_text",
    "validate_case_matches_checkpoint",
    "whitespace_tokenize",
)

RUN_CLASSIFIER_NAMES = {
    "DataProcessor": UserProcessor,
    "InputExample": InputExample,
    "PaddingInputExample": PaddingInputExample,
}
TOKENIZATION_NAMES = {name: getattr(full_tokenizer, name) for name in _TOKENIZATION_NAMES}

# The names a processor file may import them by; `bert.*` as in the pip package bert-tensorflow.
# Files copied from the original often import `modeling` and `optimization` without using them;
# empty stand-ins let them load (and keep this project's `modeling` package out of them).
MODULE_NAMES = (
    "run_classifier",
    "tokenization",
    "modeling",
    "optimization",
    "bert",
    "bert.run_classifier",
    "bert.tokenization",
    "bert.modeling",
    "bert.optimization",
)


def _module(name, names, doc):
    module = types.ModuleType(name, doc)
    module.__dict__.update(names)
    module.__all__ = sorted(names)
    offered = f"has only {', '.join(sorted(names))}" if names else "is empty"

    def missing(attribute):
        # A clearer message than Python's for the original's names not provided here.
        raise AttributeError(
            f"{name}.{attribute} is not available to processor files: their {name} {offered}."
        )

    module.__getattr__ = missing
    return module


def original_modules():
    """Builds the stand-ins of the original's modules, fresh ones for each processor file.

    Returns:
        dict `{module name: module}` for every name of `MODULE_NAMES`: `run_classifier` with
        `DataProcessor` (`UserProcessor`), `InputExample` and `PaddingInputExample`;
        `tokenization` with the original's tokenizers and text helpers; `modeling` and
        `optimization` empty; `bert`, a package holding the four, which only they can be
        imported from.
    """
    modules = {
        "run_classifier": _module(
            "run_classifier", RUN_CLASSIFIER_NAMES, "The original's run_classifier names."
        ),
        "tokenization": _module("tokenization", TOKENIZATION_NAMES, "The original's tokenization."),
        "modeling": _module("modeling", {}, "Empty: processor files need no model."),
        "optimization": _module("optimization", {}, "Empty: processor files need no optimizer."),
    }
    bert = _module("bert", modules, "The original's modules that a processor file may import.")
    # A package with no folder: `import bert.run_squad` fails as a missing module.
    bert.__path__ = []
    return {
        **modules,
        "bert": bert,
        **{f"bert.{name}": module for name, module in modules.items()},
    }
