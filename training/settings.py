"""Runner settings from parsed flags, without importing TensorFlow (data tools use it too).

A runner's settings object is a dataclass whose fields are flags of the same names; the flag
definitions hold the defaults, so each setting has exactly one.
"""

import dataclasses

from absl import logging


def settings_from_flags(settings_class, flag_values, **overrides):
    """Builds a settings dataclass from the flags of the same names.

    A field's value is `overrides[name]` if given, else the flag `--name`, else the field's
    default; the flags hold the defaults, so each setting has one.

    Args:
        settings_class: a dataclass such as `TrainConfig` or `ClassifierRun`.
        flag_values: the parsed absl flag values of the runner.
        **overrides: values computed by the runner (e.g. a canonical task name).
    """
    values = {}
    for field in dataclasses.fields(settings_class):
        if field.name in overrides:
            values[field.name] = overrides[field.name]
        elif field.name in flag_values:
            values[field.name] = flag_values[field.name].value
    return settings_class(**values)


def log_at_info(flag_values):
    """Logs the runner's progress (INFO) unless --verbosity / -v asks for another level."""
    if not flag_values["verbosity"].present:
        logging.set_verbosity(logging.INFO)
