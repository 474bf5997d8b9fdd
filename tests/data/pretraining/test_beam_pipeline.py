"""create_pretraining_data --beam: the fast mode's files, on Beam's local runners.

Apache Beam's pins contradict the project's (protobuf, pyarrow, pillow), so Beam lives in an
interpreter of its own (scripts/test.sh makes it and names it in BERT_BEAM_PYTHON); the pipeline
runs there in a child process, and this process compares its files with the fast mode's, run
here. Without such an interpreter (and without Beam here) these tests are skipped.
"""

import glob
import json
import os
import random
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from data.pretraining import fast as fast_mode
from data.pretraining.create import create_pretraining_data, output_file_names
from tests.data.pretraining.test_pretraining_data import _documents, _text, _write_vocab
from tests.helpers.paths import REPO
from tests.helpers.pretraining_options import ORIGINAL_DEFAULTS, pretraining_options

# Small shards, so that the corpus is cut into about 15, several of them across files.
_SHARD_BYTES = 2048
_FLAG_SETS = {
    "short": dict(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, random_seed=5),
    "whole_words": dict(
        max_seq_length=48, max_predictions_per_seq=8, dupe_factor=2, do_whole_word_mask=True
    ),
}
_IN_PROCESS = ""
_TWO_PROCESSES = "--direct_running_mode=multi_processing --direct_num_workers=2"
_RETRYING = "--runner=apache_beam.runners.direct.direct_runner.BundleBasedDirectRunner"


def _beam_python():
    configured = os.environ.get("BERT_BEAM_PYTHON")
    if configured:
        return configured
    try:
        import apache_beam  # noqa: F401
    except ImportError:
        return None
    return sys.executable


@pytest.fixture(scope="module")
def beam_python():
    python = _beam_python()
    if python is None:
        pytest.skip("Apache Beam is not installed: set BERT_BEAM_PYTHON (scripts/test.sh does)")
    return python


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Vocabulary and six text files of 20 documents (one without a final newline)."""
    root = tmp_path_factory.mktemp("beam_corpus")
    rng = random.Random(7)
    _write_vocab(root / "vocab.txt")
    documents = _documents(rng, 120)
    for index in range(6):
        text = _text(documents[20 * index : 20 * (index + 1)], rng)
        (root / f"part_{index}.txt").write_text(text.rstrip() if index == 2 else text)
    return root


def _run_beam(beam_python, directory, jobs):
    """Runs `jobs` (see tests/helpers/beam_run.py) in the Beam interpreter; their results."""
    config = directory / "jobs.json"
    config.write_text(json.dumps(jobs))
    env = {**os.environ, "PYTHONPATH": REPO, "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [beam_python, "-m", "tests.helpers.beam_run", str(config)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(jobs), result.stderr[-3000:]
    return lines, result.stderr


def _job(corpus, outputs, flags, pipeline_options, **extra):
    return {
        "input_file": str(corpus / "part_*.txt"),
        "output_file": ",".join(str(path) for path in outputs),
        "vocab_file": str(corpus / "vocab.txt"),
        "options": {**ORIGINAL_DEFAULTS, **flags},
        "num_workers": 0,
        "beam_pipeline_options": pipeline_options,
        "shard_bytes": _SHARD_BYTES,
        **extra,
    }


def _run_fast(corpus, outputs, flags, monkeypatch, input_file=None):
    monkeypatch.setattr(fast_mode, "_SHARD_BYTES", _SHARD_BYTES)
    return create_pretraining_data(
        input_file or str(corpus / "part_*.txt"),
        ",".join(str(path) for path in outputs),
        str(corpus / "vocab.txt"),
        pretraining_options(**flags),
        num_workers=2,
    )


def _fast_totals(caplog):
    lines = [r.getMessage() for r in caplog.records if r.name == "absl"]
    return re.findall(r"MB/s\): (\d+ documents, \d+ instances)", "\n".join(lines))[-1]


def _parsed(path):
    return [
        {key: list(getattr(value, value.WhichOneof("kind")).value) for key, value in features}
        for features in (
            sorted(tf.train.Example.FromString(raw).features.feature.items())
            for raw in tf.compat.v1.io.tf_record_iterator(str(path))
        )
    ]


def test_the_corpus_has_shards_across_files(corpus, monkeypatch):
    files = sorted(glob.glob(str(corpus / "part_*.txt")))
    shards = list(fast_mode.iter_shard_spans(files, _SHARD_BYTES, 8))
    assert len(shards) > 8
    assert sum(len({path for path, _, _ in spans if path}) > 1 for _, spans in shards) >= 3
    # The spans give back each shard's bytes, and the shards the whole input.
    assert all(fast_mode.read_spans(spans) == data for data, spans in shards)
    whole = b"".join(open(path, "rb").read().rstrip(b"\n") + b"\n" for path in files)
    text = b"".join(data for data, _ in shards)
    assert text.replace(b"\n", b"") == whole.replace(b"\n", b"")


@pytest.mark.parametrize("name", list(_FLAG_SETS))
def test_beam_writes_the_fast_mode_files(name, beam_python, corpus, tmp_path, monkeypatch, caplog):
    flags = _FLAG_SETS[name]
    caplog.set_level("INFO", logger="absl")
    expected = [tmp_path / f"fast_{i}.tfrecord" for i in range(3)]
    total = _run_fast(corpus, expected, flags, monkeypatch)
    runs = {"in_process": _IN_PROCESS, "two_processes": _TWO_PROCESSES, "reversed": _IN_PROCESS}
    outputs = {run: [tmp_path / f"{run}_{i}.tfrecord" for i in range(3)] for run in runs}
    jobs = [_job(corpus, outputs[run], flags, options) for run, options in runs.items()]
    # The file system lists the glob's files the other way round: the same files.
    jobs[-1]["reverse_listing"] = True
    results, log = _run_beam(beam_python, tmp_path, jobs)
    assert results == [{"total": total}] * len(runs)
    # The fast mode's log: its first 20 examples and its final statistics, once per run.
    assert total > 300 and log.count("*** Example ***") == 20 * len(runs)
    totals = re.findall(r"MB/s\): (\d+ documents, \d+ instances)", log)
    assert totals == [_fast_totals(caplog)] * len(runs)
    assert log.count(f"Wrote {total} total instances") == len(runs)
    assert re.search(r"Read [\d.]+ of [\d.]+ MB \([\d.]+ MB/s, ETA \d+ s\): \d+ documents", log)
    for run in runs:
        for fast_file, beam_file in zip(expected, outputs[run], strict=True):
            assert _parsed(beam_file) == _parsed(fast_file), (run, beam_file)
            assert beam_file.read_bytes() == fast_file.read_bytes(), (run, beam_file)
    # Nothing but the outputs in the directory: no temporary file is left.
    assert len(os.listdir(tmp_path)) == 3 * (len(runs) + 1) + 1


def test_a_glob_reads_in_sorted_order_whatever_the_listing(corpus, tmp_path, monkeypatch):
    flags = _FLAG_SETS["short"]
    listed = glob.glob

    def reversed_listing(pattern, *args, **kwargs):
        return sorted(listed(pattern, *args, **kwargs), reverse=True)

    sorted_run = [tmp_path / "sorted.tfrecord"]
    _run_fast(corpus, sorted_run, flags, monkeypatch)
    monkeypatch.setattr(glob, "glob", reversed_listing)
    reversed_run = [tmp_path / "reversed.tfrecord"]
    _run_fast(corpus, reversed_run, flags, monkeypatch)
    assert reversed_run[0].read_bytes() == sorted_run[0].read_bytes()
    # The faithful mode still reads in the listing's order, as the original did.
    faithful = [tmp_path / "faithful_sorted.tfrecord", tmp_path / "faithful_reversed.tfrecord"]
    options = pretraining_options(**flags)
    vocab = str(corpus / "vocab.txt")
    create_pretraining_data(str(corpus / "part_*.txt"), str(faithful[1]), vocab, options)
    monkeypatch.setattr(glob, "glob", listed)
    create_pretraining_data(str(corpus / "part_*.txt"), str(faithful[0]), vocab, options)
    assert faithful[0].read_bytes() != faithful[1].read_bytes()


def test_retried_bundles_leave_no_duplicate_records(beam_python, corpus, tmp_path, monkeypatch):
    flags = _FLAG_SETS["short"]
    expected = [tmp_path / f"fast_{i}.tfrecord" for i in range(2)]
    total = _run_fast(corpus, expected, flags, monkeypatch)
    (tmp_path / "failures").mkdir()
    outputs = [tmp_path / f"retried_{i}.tfrecord" for i in range(2)]
    job = _job(corpus, outputs, flags, _RETRYING, fail_once=str(tmp_path / "failures"))
    results, log = _run_beam(beam_python, tmp_path, [job])
    # Both steps did fail once, and the runner ran their bundles again.
    assert sorted(os.listdir(tmp_path / "failures")) == ["process", "write"]
    assert log.count("fails once after") >= 2
    assert results == [{"total": total}]
    for fast_file, beam_file in zip(expected, outputs, strict=True):
        assert beam_file.read_bytes() == fast_file.read_bytes()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".tmp")]


def test_runner_script_beam_run_and_its_error_sentence(beam_python, corpus, tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n\n", encoding="utf-8")
    (tmp_path / "out").mkdir()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    flags = dict(dupe_factor=1, max_seq_length=64)
    base = [
        beam_python, "create_pretraining_data.py", f"--vocab_file={corpus / 'vocab.txt'}",
        "--beam", "--num_workers=2", *(f"--{key}={value}" for key, value in flags.items()),
    ]  # fmt: skip
    good = subprocess.run(
        [*base, f"--input_file={corpus / 'part_*.txt'}", f"--output_file={tmp_path}/out/a.tf",
         "--output_shards=2"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert good.returncode == 0, good.stderr[-3000:]
    outputs = [tmp_path / "out" / f"a.tf-0000{i}-of-00002" for i in range(2)]
    expected = [tmp_path / f"fast_{i}.tfrecord" for i in range(2)]
    create_pretraining_data(
        str(corpus / "part_*.txt"),
        ",".join(map(str, expected)),
        str(corpus / "vocab.txt"),
        pretraining_options(**flags),
        num_workers=1,
    )
    assert [path.read_bytes() for path in outputs] == [path.read_bytes() for path in expected]
    bad = subprocess.run(
        [*base, f"--input_file={tmp_path / 'empty.txt'}", f"--output_file={tmp_path}/out/b.tf"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert bad.returncode == 1
    last = bad.stderr.strip().splitlines()[-1]
    assert last.startswith("create_pretraining_data.py: error: The input files ")
    assert last.endswith(
        "hold no text. Write one sentence per line and a blank line between documents."
    )
    # No output and no temporary file of the failed run.
    assert sorted(os.listdir(tmp_path / "out")) == [path.name for path in outputs]


def test_output_shards_are_named_as_beam_names_them():
    assert output_file_names("gs://b/train.tfrecord", 3) == [
        "gs://b/train.tfrecord-00000-of-00003",
        "gs://b/train.tfrecord-00001-of-00003",
        "gs://b/train.tfrecord-00002-of-00003",
    ]
    assert output_file_names("a.tf,b.tf") == ["a.tf", "b.tf"]
    with pytest.raises(ValueError, match="takes one --output_file prefix, got 2 paths"):
        output_file_names("a.tf,b.tf", 2)


def test_beam_without_beam_installed_is_one_sentence(corpus, tmp_path):
    try:
        import apache_beam  # noqa: F401

        pytest.skip("Apache Beam is installed in this interpreter")
    except ImportError:
        pass
    result = subprocess.run(
        [sys.executable, "create_pretraining_data.py", "--beam",
         f"--input_file={corpus / 'part_*.txt'}", f"--output_file={tmp_path}/a.tfrecord",
         f"--vocab_file={corpus / 'vocab.txt'}"],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("create_pretraining_data.py: error: --beam needs Apache Beam")
    assert os.listdir(tmp_path) == []
