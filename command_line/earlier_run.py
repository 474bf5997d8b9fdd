"""Settings a command takes from the training run it reads (its `flags.txt`), unless given on
its own command line: export_model.py and convert_checkpoint.py export with the run's
--max_seq_length, --do_lower_case, ... rather than with defaults of their own.
"""

import os

from absl import logging

from fileio import reading
from fileio.flags_file import FLAGS_FILE, recorded_flags


def take_settings_of_run(flag_values, checkpoint, names):
    """Sets each of `names` not given on the command line to the value the training run of
    `checkpoint` used, as its `flags.txt` (beside its checkpoints) records it.

    So that export_model.py exports with the run's --max_seq_length, --do_lower_case, ... by
    default, rather than with defaults of its own that may differ.

    Args:
        flag_values: the parsed absl `FlagValues`.
        checkpoint: a run's output_dir or a checkpoint prefix in it.
        names: flags the run and this command share.

    Returns:
        dict name -> value taken from the run (empty without a flags.txt).
    """
    folder = checkpoint if reading.is_dir(checkpoint) else os.path.dirname(checkpoint)
    recorded = recorded_flags(folder, names)
    taken = {}
    for name in names:
        if name in recorded and not flag_values[name].present:
            flag_values[name].value = flag_values[name].parser.parse(recorded[name])
            taken[name] = flag_values[name].value
            logging.info("--%s=%s from %s", name, taken[name], os.path.join(folder, FLAGS_FILE))
    return taken
