"""Shared fixtures: references produced by Google's own code, once per test session."""

import fcntl
import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The suite runs in three worker processes (pytest-xdist, scripts/test.sh), and most tests
# start a runner beside their worker: with TensorFlow's default of one compute thread per core,
# each of those processes would split the two cores of a CI machine with the others. One
# thread each measured 10% less wall time on the runner and export modules.
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")


def _has_native_float16():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags_line = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return False
    return "avx512_fp16" in flags_line.split() or "amx_tile" in flags_line.split()


# On CPUs with native float16 (AVX512-FP16, AMX) oneDNN's float16 kernels round differently
# from the reference paths the float16 and XLA comparisons were measured on (mixed_float16
# losses 0.16 apart from float32 instead of < 0.016); the tests, and the runners they start,
# use TensorFlow's own kernels there.
if _has_native_float16():
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from absl import flags  # noqa: E402

from tests.helpers.minilm import minilm_dir  # noqa: E402
from tests.helpers.scripts import REPO, run_in_repo  # noqa: E402
from tests.oracles import run_oracle  # noqa: E402


def built_once(tmp_path_factory, name, build):
    """The folder `name`, filled by `build(folder)` once per test session.

    Under pytest-xdist the workers of one session share the parent of their base temporary
    folders: the first worker to ask builds there under a file lock, the others wait for it
    and read the same files (fixtures that take a minute would otherwise be built once per
    worker). Users of the folder only read it.
    """
    if "PYTEST_XDIST_WORKER" not in os.environ:
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent
    folder = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".complete").exists():
            # A worker that failed half-way left no marker: start again from nothing.
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / ".complete").touch()
    return folder


def _original(tmp_path_factory, hidden_act, seed, with_heads):
    def build(out):
        args = ["--out_dir", out, "--hidden_act", hidden_act, "--seed", seed]
        run_oracle("original_bert", args + (["--with_heads"] if with_heads else []))

    out = built_once(tmp_path_factory, f"original_{hidden_act}_{seed}", build)
    return {
        "dir": str(out),
        "ckpt": str(out / "bert_model.ckpt"),
        "config": str(out / "bert_config.json"),
        "ref": dict(np.load(out / "reference.npz")),
    }


@pytest.fixture(scope="session")
def original_gelu(tmp_path_factory):
    """A random tiny checkpoint written by the original modeling.py (tanh gelu), with the
    pretraining heads and optimizer slots, and the original's outputs on a padded batch."""
    return _original(tmp_path_factory, "gelu", 0, True)


@pytest.fixture(scope="session")
def original_relu(tmp_path_factory):
    """As `original_gelu`, with relu and without heads."""
    return _original(tmp_path_factory, "relu", 3, False)


@pytest.fixture(autouse=True)
def _float32_policy():
    """Tests that build a Trainer in mixed precision set Keras' global policy (the Trainer
    builds its model under it); the next test starts from float32 again. Where no test has
    loaded Keras, no policy was set: TensorFlow-free tests do not load it (4 s) for this."""
    yield
    keras = sys.modules.get("keras")
    if keras is not None:
        keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="module")
def oracle_flags():
    """bert-tensorflow's tokenizer reads FLAGS.preserve_unused_tokens (default False) on every
    call, so absl flags must count as parsed while the original runs in this process."""
    was_parsed = flags.FLAGS.is_parsed()
    if not was_parsed:
        flags.FLAGS.mark_as_parsed()
    assert flags.FLAGS.preserve_unused_tokens is False
    yield
    if not was_parsed:
        flags.FLAGS.unparse_flags()


@pytest.fixture(scope="session")
def minilm_tf1(tmp_path_factory):
    """all-MiniLM-L6-v2 (real weights) converted by convert_checkpoint.py to the original
    layout: bert_model.ckpt, bert_config.json and vocab.txt."""

    def build(out):
        result = run_in_repo(
            [
                sys.executable,
                os.path.join(REPO, "convert_checkpoint.py"),
                f"--input_checkpoint={minilm_dir()}",
                "--input_format=hf",
                f"--output_dir={out}",
                "--output_format=tf1",
            ],
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-3000:]

    return built_once(tmp_path_factory, "minilm_tf1", build)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Tiny learnable pretraining TFRecords (`data.tfrecord`, sequence length 32, 5 predictions)
    and the tiny `bert_config.json`, for the loop and run_pretraining.py."""
    from tests.helpers.pretraining_records import write_records
    from tests.helpers.tiny_config import write_tiny_config

    root = tmp_path_factory.mktemp("pretraining_data")
    write_records(root / "data.tfrecord", num_examples=256)
    write_tiny_config(root / "bert_config.json")
    return root


# The modules that take minutes, longest first (scripts/test.sh prints the slowest tests). With
# one module per worker at a time, a long module started last keeps one worker busy after the
# other has finished; started first, the short modules fill in around them.
_LONGEST_FIRST = (
    "tests/runners/test_run_squad.py",
    "tests/runners/test_multi_worker.py",
    "tests/runners/test_run_sweep.py",
    "tests/benchmarks/test_accelerator_check.py",
    "tests/runners/test_run_ner.py",
    "tests/runners/test_run_pretraining.py",
    "tests/serving/test_export_classifier.py",
    "tests/runners/test_run_classifier_own_data.py",
    "tests/runners/test_run_distill.py",
    "tests/serving/test_export_tflite.py",
    "tests/serving/test_serve.py",
    "tests/serving/test_export_squad.py",
    "tests/runners/test_run_classifier.py",
    "tests/serving/test_export_tfhub.py",
    "tests/runners/test_extract_features.py",
    "tests/training/test_length_buckets.py",
    "tests/modeling/test_formats.py",
    "tests/training/test_loop.py",
    "tests/serving/test_export_long_inputs.py",
    "tests/serving/test_export_ner.py",
    "tests/training/test_mixed_precision.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {module: i for i, module in enumerate(_LONGEST_FIRST)}
    # A stable sort: each module's tests stay together and in their order.
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_terminal_summary(terminalreporter):
    """Each tier's share of the run: how many tests and their summed seconds (setup, call and
    teardown; with several workers the wall time is less). The quick tier is the tests not
    marked `slow`; the full suite is all of them."""
    seconds = {"quick": 0.0, "slow": 0.0}
    tests = {"quick": set(), "slow": set()}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) is None or not hasattr(report, "duration"):
                continue
            tier = "slow" if "slow" in getattr(report, "keywords", {}) else "quick"
            seconds[tier] += report.duration
            tests[tier].add(report.nodeid)
    if not tests["quick"] and not tests["slow"]:
        return
    terminalreporter.write_sep("-", "tiers")
    for tier, what in (("quick", "quick tier (not slow)"), ("slow", "full tier only (slow)")):
        if not tests[tier]:
            continue
        terminalreporter.write_line(
            f"{what}: {len(tests[tier])} tests, {seconds[tier]:.0f} s of test time"
        )
