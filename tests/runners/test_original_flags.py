"""Every flag of the original scripts (Google's `bert` package, read as source: what its
`flags.DEFINE_*` calls say) is defined by the runner of the same name, with the same default."""

import ast
import json
import os
import sys

import bert
import pytest

from tests.helpers.scripts import REPO, run_in_repo

_DUMP = """
import importlib, json, sys
from absl import flags
runner = sys.argv[1]
sys.argv = [runner + ".py"]
sys.path.insert(0, {repo!r})
importlib.import_module(runner)
print(json.dumps({{name: flags.FLAGS[name].default for name in flags.FLAGS}}, default=str))
"""


def _original_defaults(script):
    path = os.path.join(os.path.dirname(bert.__file__), f"{script}.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    defaults = {}
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        if isinstance(func, ast.Attribute) and func.attr.startswith("DEFINE_"):
            defaults[ast.literal_eval(node.args[0])] = ast.literal_eval(node.args[1])
    return defaults


@pytest.mark.parametrize(
    "script",
    [
        "run_classifier",
        "run_squad",
        "run_pretraining",
        "extract_features",
        "create_pretraining_data",
    ],
)
def test_the_originals_flags_and_defaults(tmp_path, script):
    original = _original_defaults(script)
    assert len(original) >= 10  # the source was read
    dump = tmp_path / "dump_flags.py"
    dump.write_text(_DUMP.format(repo=REPO))
    result = run_in_repo([sys.executable, str(dump), script])
    assert result.returncode == 0, result.stderr[-2000:]
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    differ = {name: (value, ours.get(name, "not defined")) for name, value in original.items()}
    assert {k: v for k, v in differ.items() if v[0] != v[1]} == {}
