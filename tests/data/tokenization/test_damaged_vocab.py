"""A damaged vocab.txt (empty, not UTF-8): one sentence naming the file and the fix."""

import os
import sys

import pytest

from data.tokenization.full_tokenizer import FullTokenizer
from tests.helpers.scripts import REPO, run_in_repo


def test_an_empty_vocabulary_is_refused(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"")
    with pytest.raises(ValueError) as raised:
        FullTokenizer(str(path))
    assert str(raised.value) == (
        f"Vocabulary file {str(path)!r} is empty (truncated or damaged?): pass the vocab.txt "
        "that belongs to the model (one token per line)."
    )


@pytest.mark.parametrize(
    "content, message",
    [
        (
            b"[PAD]\n[UNK]\n\xff\xfe[CLS]\n",
            "line 3, is not valid UTF-8 (invalid start byte at byte 0): the file is damaged or in "
            "another encoding; restore the model's vocab.txt or save the vocabulary as UTF-8.",
        ),
        (b"", "is empty (truncated or damaged?): pass the vocab.txt that belongs to the model"),
    ],
)
def test_create_pretraining_data_names_the_vocabulary(tmp_path, content, message):
    (tmp_path / "vocab.txt").write_bytes(content)
    (tmp_path / "corpus.txt").write_text("the cat sat .\nit ran .\n\na dog .\n")
    output = tmp_path / "out.tfrecord"
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "create_pretraining_data.py"),
            f"--input_file={tmp_path / 'corpus.txt'}",
            f"--output_file={output}",
            f"--vocab_file={tmp_path / 'vocab.txt'}",
        ],
        timeout=120,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    vocab = str(tmp_path / "vocab.txt")
    assert last.startswith(f"create_pretraining_data.py: error: Vocabulary file {vocab!r}")
    assert message in last, last
    assert not output.exists()
