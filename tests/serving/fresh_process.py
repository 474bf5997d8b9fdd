"""Runs a script in a fresh interpreter that cannot import this project: what a serving host
has (tensorflow, tensorflow_text and, for the TF Hub checks, tensorflow_hub and Model Garden)."""

import json
import os
import re
import subprocess
import sys

from tests.helpers.scripts import ENV

# Prepended to every script: fails if any project package is importable.
_GUARD = """
import importlib.util, sys
for _name in ("modeling", "data", "training", "serving", "fileio", "command_line", "jobs"):
    _spec = importlib.util.find_spec(_name)
    assert _spec is None or "site-packages" in str(_spec.origin), (_name, _spec)
"""


def run_fresh(tmp_path, name, body, inputs):
    """Runs `body` (Python source reading `INPUTS`, setting `OUTPUTS`) in `python -I`.

    Args:
        tmp_path: a directory for the script and its files (also the working directory).
        name: file name stem.
        body: the script; it sees `INPUTS` (the JSON-decoded `inputs`) and must assign a
            JSON-serialisable `OUTPUTS`.
        inputs: JSON-serialisable inputs.

    Returns:
        The decoded `OUTPUTS`.
    """
    script = tmp_path / f"{name}.py"
    in_path, out_path = tmp_path / f"{name}_in.json", tmp_path / f"{name}_out.json"
    in_path.write_text(json.dumps(inputs))
    script.write_text(
        _GUARD
        + f"import json\nINPUTS = json.load(open({str(in_path)!r}))\n"
        + body
        + f"\njson.dump(OUTPUTS, open({str(out_path)!r}, 'w'))\n"
    )
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-I", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(out_path.read_text())


def saved_model_cli_signatures(export_dir):
    """`saved_model_cli show --all` parsed: signature name -> ({input: dtype}, {output: dtype})."""
    shown = subprocess.run(
        ["saved_model_cli", "show", "--dir", str(export_dir), "--all"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    signatures = {}
    for block in re.split(r"\nsignature_def\['", shown.stdout)[1:]:
        name = block.split("'", 1)[0]
        inputs = re.findall(r"inputs\['(\w+)'\] tensor_info:\s+dtype: (\w+)", block)
        outputs = re.findall(r"outputs\['(\w+)'\] tensor_info:\s+dtype: (\w+)", block)
        signatures[name] = (dict(inputs), dict(outputs))
    return signatures


def export_here(bert_config_file, **settings):
    """export_model.py's job run in this process (what the runner does after parsing flags),
    for tests about the export rather than its command line; `settings` are `ExportRun` fields
    (`do_lower_case` defaults to true)."""
    from jobs.export_run import ExportRun, export_model
    from modeling.config import BertConfig

    settings = {
        "do_lower_case": True,
        **{k: str(v) if hasattr(v, "parts") else v for k, v in settings.items()},
    }
    return export_model(ExportRun(**settings), BertConfig.from_json_file(str(bert_config_file)))
