"""`flags.txt`: what a run records of its command line beside its checkpoints, and how later
commands (export, conversion, evaluation-only runs, the memory plan) read it back.

An absl flagfile, one `--name=value` per line, so `--flagfile=flags.txt` repeats the run.
"""

import os
import sys

from fileio import reading

FLAGS_FILE = "flags.txt"


def flagfile_text(flag_values):
    """The runner's own flags (not absl's or TensorFlow's) as an absl flagfile, one per line.

    The Trainer saves it as `output_dir/flags.txt`, so a run can be told apart from another
    and repeated with `--flagfile=flags.txt`.
    """
    lines = [f"# {os.path.basename(sys.argv[0])}: repeat with --flagfile=<this file>"]
    for module, module_flags in sorted(flag_values.flags_by_module_dict().items()):
        if module.startswith(("absl.", "tensorflow.")):
            continue
        lines += sorted(f.serialize() for f in module_flags if f.serialize())
    return "\n".join(lines) + "\n"


def recorded_flags(folder, negatable=()):
    """Flag name -> value text, as `folder/flags.txt` (a run's, `Trainer`) records them; empty
    without one. `--noname` of a name in `negatable` reads as name -> "false"."""
    path = os.path.join(folder, FLAGS_FILE)
    if not reading.is_file(path):
        return {}
    recorded = {}
    with reading.open_for_reading(path) as f:
        for line in f:
            word = line.strip()
            if not word.startswith("--"):
                continue
            name, has_value, text = word[2:].partition("=")
            if has_value:
                recorded[name] = text
            elif name.startswith("no") and name[2:] in negatable:
                recorded[name[2:]] = "false"
            else:
                recorded[name] = "true"
    return recorded


def recorded_command(folder):
    """(the runner script its flags.txt names, e.g. "run_classifier.py", and the flags it
    records as command-line arguments, e.g. ("--do_train", "--learning_rate=2e-05")), or
    (None, ()) without one."""
    path = os.path.join(folder, FLAGS_FILE)
    if not reading.is_file(path):
        return None, ()
    with reading.open_for_reading(path) as f:
        header, *lines = f.read().splitlines()
    script = header.lstrip("# ").split(":", 1)[0].strip() if header.startswith("#") else None
    return script, tuple(line.strip() for line in lines if line.strip().startswith("--"))
