"""Every runner command in README.md, CONTRIBUTING.md and docs/ is run as written, with the
models and data it names absent: its flags exist, their values pass the runner's checks, and it
stops at the first file it needs with the runner's own sentence naming that file. The
checkpoint formats table of docs/checkpoints.md is the one convert_checkpoint.py offers."""

import glob
import os
import re
import shlex
import sys

import pytest

from modeling import formats
from tests.helpers.paths import REPO
from tests.helpers.scripts import run_in_repo

PAGES = sorted(
    [os.path.join(REPO, "README.md"), os.path.join(REPO, "CONTRIBUTING.md")]
    + glob.glob(os.path.join(REPO, "docs", "*.md"))
)
# setup.py packages the code for Beam's workers; it is not a command of the pages.
RUNNERS = {os.path.basename(p) for p in glob.glob(os.path.join(REPO, "*.py"))} - {"setup.py"}


def _commands():
    """(page, command words) for each `python <runner>.py ...` line of the pages' bash blocks."""
    found = []
    for page in PAGES:
        with open(page, encoding="utf-8") as f:
            blocks = re.findall(r"```bash\n(.*?)```", f.read(), flags=re.S)
        for block in blocks:
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #")[0].strip()
                # A value the shell reads from a file the run wrote: any number does here.
                line = re.sub(r"\$\(cat [^)]*\)", "-1.0", line)
                match = re.search(r"(?:^|\s)python ([\w/]+\.py)(\s|$)", line)
                if match and match.group(1) in RUNNERS:
                    words = shlex.split(line[match.start() :].strip())
                    found.append((os.path.relpath(page, REPO), words))
    return found


COMMANDS = _commands()


def test_the_pages_show_every_runner():
    assert len(COMMANDS) > 30
    assert RUNNERS - {words[1] for _, words in COMMANDS} == set()


# Flags whose value is a path: a relative one in the pages is a placeholder of the user's.
_PATH_FLAGS = (
    "input_file|output_file|vocab_file|bert_config_file|init_checkpoint|data_dir|output_dir|"
    "train_file|predict_file|input_checkpoint|checkpoint|export_dir|input_dir|label_file|"
    "preprocessor_export_dir|model|teacher_dir|student_config_file|student_checkpoint|"
    "transfer_file"
)


def _absent(tmp_path, words):
    """The command with its data and model paths (the variables, gs:// buckets, the documented
    placeholders) and its outputs moved under `tmp_path`, where nothing exists."""
    absent = str(tmp_path / "absent")
    text = " ".join(shlex.quote(w) for w in words).replace("/tmp/", "$OUT/")
    for variable in ("BERT_BASE_DIR", "GLUE_DIR", "SQUAD_DIR", "NER_DIR"):
        text = text.replace(f"${variable}", f"{absent}/{variable}")
    text = text.replace("gs://", f"{absent}/gs/").replace("$OUT/", f"{tmp_path}/out/")
    # Relative paths (./sample_text.txt, corpus/*.txt, path/to/...) and a container's own
    # (/models/...) under the absent folder.
    return [
        re.sub(
            rf"^(--(?:{_PATH_FLAGS})=)(?!{re.escape(str(tmp_path))})/?(.+)$", rf"\1{absent}/\2", w
        )
        for w in shlex.split(text)
    ]


@pytest.mark.parametrize(
    "page,words",
    COMMANDS,
    ids=[f"{page}:{words[1]}:{i}" for i, (page, words) in enumerate(COMMANDS)],
)
def test_documented_command_runs_to_its_first_missing_file(page, words, tmp_path):
    words = _absent(tmp_path, words)
    result = run_in_repo([sys.executable, *words[1:]], timeout=300)
    last = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
    assert result.returncode == 1, result.stderr[-3000:]
    # The runner's own sentence about a file it needs, not a flag it does not know.
    assert last.startswith(f"{words[1]}: error: "), result.stderr[-3000:]
    assert str(tmp_path / "absent") in last, last
    assert "internal error" not in last and "Unknown command line flag" not in result.stderr
    # Nothing written.
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_the_formats_table_is_the_command_lines():
    with open(os.path.join(REPO, "docs", "checkpoints.md"), encoding="utf-8") as f:
        page = f.read().splitlines()
    table = formats.markdown_table()
    start = page.index(table[0])
    assert page[start : start + len(table)] == table
    with open(os.path.join(REPO, "convert_checkpoint.py"), encoding="utf-8") as f:
        runner = f.read()
    assert "list(INPUT_FORMATS)" in runner and "list(OUTPUT_FORMATS)" in runner
