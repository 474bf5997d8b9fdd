"""Loading a processor file: `--processor=path/to/file.py:ClassName`.

Users of the original wrote their task's `DataProcessor` subclass in a file of their own,
importing the original's `run_classifier` and `tokenization` (or `bert.run_classifier` and
`bert.tokenization`). `load_processor` runs such a file unchanged: while it loads, those names are
this project's stand-ins (`data/own_data/original_api.py`), and the file's own folder is on
`sys.path` for its sibling imports. Afterwards `sys.modules` and `sys.path` are as they were, so a
real `bert` package imported elsewhere is untouched.

Every mistake is one `ValueError` (`UserError`) sentence naming `--processor`, the file and the
fix. TensorFlow-free: the runner loads the file while it checks its flags.
"""

import importlib.util
import itertools
import os
import sys
import threading
import traceback

from data.glue.processor_base import DataProcessor
from data.own_data.original_api import MODULE_NAMES, UserProcessor, original_modules
from fileio.errors import UserError, first_line

# sys.modules and sys.path are process-wide: one file loads at a time.
_LOCK = threading.Lock()
_COUNTER = itertools.count()


def split_spec(spec):
    """Splits `--processor`'s value into the file's path and the class name (None if absent).

    The class name follows the last colon unless that colon is part of a Windows drive
    (`C:\\dir\\file.py`).

    Raises:
        ValueError: the value names no `.py` file.
    """
    path, class_name = spec, None
    head, colon, tail = spec.rpartition(":")
    if colon and "/" not in tail and "\\" not in tail:
        path, class_name = head, tail.strip() or None
    if not path.endswith(".py"):
        raise UserError(
            f"--processor={spec} names no Python file: pass path/to/file.py:ClassName, the .py "
            "file that defines the processor and, if it defines several, the class to use."
        )
    return path, class_name


def load_processor(spec):
    """Loads the processor class a file defines and returns an instance of it.

    Args:
        spec: `--processor`'s value, `path/to/file.py:ClassName`, or `path/to/file.py` when the
            file defines exactly one `DataProcessor` subclass; a relative path starts at the
            working directory.

    Returns:
        An instance of the class, created without arguments as the original created its
        processors, with `source_file` (the file's absolute path). A subclass of the stand-in
        `run_classifier.DataProcessor` (`UserProcessor`) has its defaults: `name`,
        `is_regression`, `has_text_b`, `data_files`, `get_dev_sets`, `get_test_sets`.

    Raises:
        ValueError: the value names no file, the file is missing or fails to load, the class
            is missing or no `DataProcessor`, or the file defines several and names none.
    """
    path, class_name = split_spec(spec)
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(path):
        raise UserError(
            f"--processor={spec}: file {path} not found (a relative path starts at the working "
            f"directory, {os.getcwd()}): pass the path of the .py file that defines the processor."
        )
    module = _load_module(spec, path)
    cls = _find_class(spec, path, module, class_name)
    try:
        processor = cls()
    except Exception as err:
        raise UserError(
            f"--processor={spec}: {cls.__name__}() raised {_located(err, path)}: its __init__ "
            "must work without arguments, as the original creates processors."
        ) from err
    processor.source_file = path
    return processor


def _load_module(spec, path):
    """Runs the file as a new module, with the original's module names while it runs."""
    stem = "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[: -len(".py")])
    name = f"_processor_file_{next(_COUNTER)}_{stem}"
    folder = os.path.dirname(path)
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    with _LOCK:
        saved_modules = dict(sys.modules)
        saved_path = list(sys.path)
        sys.modules.update(original_modules())
        # In sys.modules while it runs, as an imported module is (dataclasses, pickle need it).
        sys.modules[name] = module
        sys.path.insert(0, folder)
        try:
            module_spec.loader.exec_module(module)
        except (Exception, SystemExit) as err:
            raise UserError(
                f"--processor={spec}: loading {path} raised {_located(err, path)}: fix the file "
                "(it runs as a module; of the original's code it gets run_classifier's example "
                "and processor classes and tokenization's functions)."
            ) from err
        finally:
            _restore(saved_modules, name, folder)
            sys.path[:] = saved_path
    return module


def _restore(saved, name, folder):
    """Puts back every module that was loaded before, and removes the file, the stand-ins and
    the file's sibling modules.

    Modules the file imported from elsewhere (the standard library, numpy) stay loaded, as
    after any import: a compiled module cannot be loaded twice. The sibling modules go, so that
    another processor file's `utils.py` is not mistaken for this one's.
    """
    replaced = {*MODULE_NAMES, name}
    for key in [key for key in sys.modules if key not in saved]:
        file = getattr(sys.modules[key], "__file__", None)
        if key in replaced or (file and os.path.dirname(os.path.abspath(file)) == folder):
            del sys.modules[key]
    # The entries the stand-ins replaced (a real `bert` package) come back as the same objects.
    sys.modules.update(saved)


def _located(err, path):
    """`Type (message) at file, line N`: the error and the line of the user's code it came from
    (the deepest frame in `path`, else the deepest frame of all)."""
    where = ""
    if isinstance(err, SyntaxError) and err.filename:
        where = f" at {err.filename}, line {err.lineno}"
        message = err.msg
    else:
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename[:1] != "<"]
        own = [f for f in frames if os.path.abspath(f.filename) == path]
        frame = (own or frames or [None])[-1]
        if frame is not None:
            where = f" at {frame.filename}, line {frame.lineno}"
        message = first_line(err)
    return f"{type(err).__name__} ({message.rstrip('.')}){where}"


def _candidates(module):
    """The DataProcessor subclasses the module defines itself, in definition order."""
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, DataProcessor)
        and value.__module__ == module.__name__
    ]


def _find_class(spec, path, module, class_name):
    candidates = _candidates(module)
    names = ", ".join(c.__name__ for c in candidates)
    if class_name is None:
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            raise UserError(
                f"--processor={spec}: {path} defines several DataProcessor subclasses ({names}): "
                f"name the one to use, as --processor={spec}:{candidates[-1].__name__}."
            )
        raise UserError(
            f"--processor={spec}: {path} defines no DataProcessor subclass: define one, as "
            "`class MyProcessor(run_classifier.DataProcessor)`, with get_train_examples, "
            "get_dev_examples, get_test_examples and get_labels."
        )
    cls = getattr(module, class_name, None)
    if cls is None:
        found = f"its DataProcessor subclasses are {names}" if candidates else "it defines none"
        raise UserError(
            f"--processor={spec}: {path} has no class {class_name} ({found}): name one of its "
            "DataProcessor subclasses after the colon."
        )
    if cls is UserProcessor or cls is DataProcessor:
        found = f"its subclasses here are {names}" if candidates else "it defines none"
        raise UserError(
            f"--processor={spec}: {class_name} in {path} is the base class itself ({found}): "
            "name the subclass that reads your files."
        )
    if not (isinstance(cls, type) and issubclass(cls, DataProcessor)):
        raise UserError(
            f"--processor={spec}: {class_name} in {path} is not a DataProcessor subclass: "
            "derive it from run_classifier.DataProcessor, as in the original, or name the class "
            "that is."
        )
    return cls
