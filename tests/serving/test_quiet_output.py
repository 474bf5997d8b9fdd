"""What export_model.py (and convert_checkpoint.py, which saves a SavedModel too) prints: its own
progress only, none of TensorFlow's C++ notices (those
TF_CPP_MIN_LOG_LEVEL governs and those it does not reach: absl's in the TFLite converter) nor
its Python INFO records; TF_CPP_MIN_LOG_LEVEL=0 and --verbosity=1 bring them back."""

import glob
import logging
import os
import re
import shutil
import sys

import numpy as np
import pytest

from tests.helpers.scripts import ENV, REPO, run_in_repo
from tests.helpers.tiny_exports import VOCAB, write_checkpoint

# An absl line of Python code: "I1207 02:14:21.369804 140109670546304 export_run.py:419] ...".
_PYTHON_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ([\w.]+\.py):\d+\] ")
_OWN_FILES = {
    os.path.basename(p)
    for p in glob.glob(os.path.join(REPO, "**", "*.py"), recursive=True)
    if "/tests/" not in p
}
# The environment of a user who set nothing.
_USER_ENV = {k: v for k, v in ENV.items() if k != "TF_CPP_MIN_LOG_LEVEL"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny MRPC classifier's checkpoint, config and vocabulary."""
    sys.path.insert(0, REPO)
    from tests.helpers.tiny_config import tiny_config, write_tiny_config
    from training.tasks import ClassifierTask

    root = tmp_path_factory.mktemp("quiet")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    write_tiny_config(root / "bert_config.json", vocab_size=len(VOCAB))
    task = ClassifierTask(tiny_config(vocab_size=len(VOCAB)), 2, False)
    write_checkpoint(task, root / "checkpoint", np.random.default_rng(0))
    return root


def _export(tiny, name, *extra, env):
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            "--task=classifier",
            "--task_name=MRPC",
            f"--checkpoint={tiny / 'checkpoint'}",
            f"--bert_config_file={tiny / 'bert_config.json'}",
            f"--vocab_file={tiny / 'vocab.txt'}",
            "--max_seq_length=24",
            f"--export_dir={tiny / name}",
            *extra,
        ],
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return (result.stdout + result.stderr).splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("extra", [(), ("--quantize=int8",)])
def test_an_export_prints_its_own_progress_only(tiny, extra):
    lines = _export(tiny, f"quiet{len(extra)}", *extra, env=_USER_ENV)
    for line in lines:
        match = _PYTHON_LINE.match(line)
        assert match and match.group(1) in _OWN_FILES, line
    text = "\n".join(lines)
    for words in ("contains input name(s)", "XNNPACK", "absl::InitializeLog", "oneDNN"):
        assert words not in text
    assert "Wrote " in lines[-1]


@pytest.mark.slow
def test_tensorflow_s_notices_come_back_when_asked_for(tiny):
    lines = _export(
        tiny,
        "verbose",
        "--quantize=int8",
        "--verbosity=1",
        env={**_USER_ENV, "TF_CPP_MIN_LOG_LEVEL": "0"},
    )
    text = "\n".join(lines)
    # The converter's absl notices, which TF_CPP_MIN_LOG_LEVEL does not reach by itself.
    assert "tf_tfl_flatbuffer_helpers.cc" in text and "Ignored output_format." in text
    # TensorFlow's own Python INFO records (the converter's SavedModel).
    assert re.search(r"fingerprinting_utils\.py:\d+\] Writing fingerprint to ", text)


@pytest.mark.slow
def test_a_conversion_to_a_tf_hub_encoder_prints_its_own_progress_only(tiny, tmp_path):
    # Saving a SavedModel logs TensorFlow's "Writing fingerprint to ..." at INFO. A TF Hub
    # encoder ships the vocab.txt found beside the checkpoint.
    shutil.copytree(tiny / "checkpoint", tmp_path / "checkpoint")
    shutil.copy(tiny / "vocab.txt", tmp_path / "checkpoint" / "vocab.txt")
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "convert_checkpoint.py"),
            f"--input_checkpoint={tmp_path / 'checkpoint'}",
            f"--bert_config_file={tiny / 'bert_config.json'}",
            "--output_format=tfhub",
            f"--output_dir={tmp_path / 'hub'}",
        ],
        timeout=600,
        env=_USER_ENV,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = (result.stdout + result.stderr).splitlines()
    for line in lines:
        match = _PYTHON_LINE.match(line)
        assert match and match.group(1) in _OWN_FILES, line
    assert "Writing fingerprint" not in "\n".join(lines)


def test_tensorflow_s_python_records_show_at_verbosity_1():
    """The filter of the renamed-inputs record export_model.py's float32 export logs."""
    import importlib.util

    from absl import logging as absl_logging

    from command_line.tensorflow_logs import _TensorFlowDetails, quiet_tensorflow_python_logs

    folder = importlib.util.find_spec("tensorflow").submodule_search_locations[0]
    quiet_tensorflow_python_logs()
    absl = logging.getLogger("absl")

    def record(level, path):
        message = "Function `serve_text` contains input name(s) 735, params"
        return logging.LogRecord("absl", level, path, 156, message, None, None)

    renamed = os.path.join(folder, "python", "saved_model", "signature_serialization.py")
    own = os.path.join(REPO, "jobs", "export_run.py")
    before = absl_logging.get_verbosity()
    try:
        absl_logging.set_verbosity(absl_logging.INFO)
        assert not absl.filter(record(logging.INFO, renamed))
        assert absl.filter(record(logging.WARNING, renamed))
        assert absl.filter(record(logging.INFO, own))
        absl_logging.set_verbosity(absl_logging.DEBUG)
        assert absl.filter(record(logging.INFO, renamed))
    finally:
        absl_logging.set_verbosity(before)
        for name in ("absl", "tensorflow"):
            logger = logging.getLogger(name)
            logger.filters = [f for f in logger.filters if not isinstance(f, _TensorFlowDetails)]
