"""What a runner logs: its own progress at INFO, and TensorFlow's C++ notices and Python log
records held back (`quiet_tensorflow_logs`, which every runner calls before TensorFlow loads).
"""

import importlib.util
import logging as std_logging
import os

from absl import logging


class _TensorFlowDetails(std_logging.Filter):
    """Lets records below WARNING logged from TensorFlow's own files through only at
    --verbosity=1 or more (read at each record, so it holds before and after the flags are
    parsed). TensorFlow logs through absl's logger as well as its own, so the file decides."""

    def __init__(self, folders):
        super().__init__()
        self.folders = folders

    def filter(self, record):
        if record.levelno >= std_logging.WARNING or not record.pathname.startswith(self.folders):
            return True
        return logging.get_verbosity() >= 1


def quiet_tensorflow_python_logs():
    """Keeps TensorFlow's Python INFO records (a SavedModel's renamed signature inputs such as
    "Function `serve_text` contains input name(s) ...", saver timings, asset paths) out of a
    runner's progress; --verbosity=1 shows them. Its warnings and errors always show."""
    # Where TensorFlow is installed, found without importing it.
    spec = importlib.util.find_spec("tensorflow")
    folders = tuple(os.path.join(p, "") for p in (spec and spec.submodule_search_locations or ()))
    details = _TensorFlowDetails(folders)
    for name in ("absl", "tensorflow"):
        logger = std_logging.getLogger(name)
        logger.filters = [f for f in logger.filters if not isinstance(f, _TensorFlowDetails)]
        logger.addFilter(details)


def quiet_tensorflow_logs():
    """No C++ start-up notices from TensorFlow (CPU features, oneDNN, and on machines without a
    GPU driver the failed CUDA start) unless TF_CPP_MIN_LOG_LEVEL asks for them, and none of
    its Python INFO records unless --verbosity=1 does (`quiet_tensorflow_python_logs`). A
    runner calls it before TensorFlow loads."""
    on_gpu_machine = os.path.exists("/proc/driver/nvidia")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if on_gpu_machine else "3")
    quiet_tensorflow_python_logs()


def log_at_info(flag_values):
    """Logs the runner's progress (INFO) unless --verbosity / -v asks for another level."""
    if not flag_values["verbosity"].present:
        logging.set_verbosity(logging.INFO)
