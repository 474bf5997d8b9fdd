"""extract_features.py against the original's example reading, features and model outputs."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from data.extraction.features import format_json_line, read_examples
from tests.helpers.paths import REPO
from tests.oracles import run_oracle

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "jim",
    "henson",
    "was",
    "a",
    "puppet",
    "##eer",
    "who",
    "?",
    ".",
    ",",
    "un",
    "##want",
    "##ed",
    "run",
    "##ning",
    "hello",
    "world",
]

LINES = [
    "Who was Jim Henson ? ||| Jim Henson was a puppeteer",
    "",
    "the cat sat on the mat ||| a ||| b",
    "hello world " * 20,
    "UNwant\u00e9d running ||| " + "the cat " * 15,
    "   ",
    "caf\u00e9 \u4e2d ||| the",
]


def _vocab(path, size):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tokens += [f"[unused{i}]" for i in range(size - len(tokens))]
    path.write_text("\n".join(tokens) + "\n")


@pytest.fixture(scope="module")
def extracted(original_gelu, tmp_path_factory):
    work = tmp_path_factory.mktemp("extract")
    _vocab(work / "vocab.txt", 99)
    (work / "input.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    common = [
        "--input_file",
        work / "input.txt",
        "--vocab_file",
        work / "vocab.txt",
        "--bert_config_file",
        original_gelu["config"],
        "--init_checkpoint",
        original_gelu["ckpt"],
        "--max_seq_length",
        16,
        "--layers=-1,0,-2",
    ]
    run_oracle("original_extract", common + ["--out_dir", work / "original"])
    cmd = [
        sys.executable,
        os.path.join(REPO, "extract_features.py"),
        *map(str, common),
        "--output_file",
        str(work / "out.jsonl"),
        "--batch_size",
        "3",
    ]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(work / "original" / "features.json") as f:
        features = json.load(f)
    return {
        "work": work,
        "log": result.stderr,
        "features": features,
        "layers": np.load(work / "original" / "layers.npz"),
        "lines": (work / "out.jsonl").read_text(encoding="utf-8").splitlines(),
    }


def test_output_matches_the_original(extracted):
    features, layers = extracted["features"], extracted["layers"]
    assert len(extracted["lines"]) == len(LINES) == len(features)
    for line, feature in zip(extracted["lines"], features, strict=True):
        record = json.loads(line)
        assert list(record) == ["linex_index", "features"]
        assert record["linex_index"] == feature["unique_id"]
        assert [t["token"] for t in record["features"]] == feature["tokens"]
        for pos, token in enumerate(record["features"]):
            assert list(token) == ["token", "layers"]
            assert [layer["index"] for layer in token["layers"]] == [-1, 0, -2]
            for j, layer in enumerate(token["layers"]):
                assert list(layer) == ["index", "values"]
                expected = layers[f"layer_{j}"][feature["unique_id"], pos]
                np.testing.assert_allclose(layer["values"], expected, atol=1.5e-5)
                assert all(v == round(v, 6) for v in layer["values"])


def test_first_examples_are_logged_like_the_original(extracted):
    first = extracted["features"][0]
    assert "*** Example ***" in extracted["log"]
    assert "tokens: " + " ".join(first["tokens"]) in extracted["log"]
    assert "input_type_ids: " + " ".join(map(str, first["input_type_ids"])) in extracted["log"]


def test_json_line_format_is_byte_exact():
    values = [np.array([[0.1234567, -2.0, 1e-7]], np.float32)]
    line = format_json_line(3, ["[CLS]"], [-1], values)
    expected = {
        "linex_index": 3,
        "features": [
            {
                "token": "[CLS]",
                "layers": [{"index": -1, "values": [round(float(v), 6) for v in values[0][0]]}],
            }
        ],
    }
    assert line == json.dumps(expected)
    assert line.startswith('{"linex_index": 3, "features": [{"token": "[CLS]", "layers": ')


def test_read_examples_splits_on_the_last_separator(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a ||| b ||| c\n\nplain \xff text\n")
    assert read_examples(str(path)) == [
        (0, "a ||| b", "c"),
        (1, "", None),
        (2, "plain  text", None),
    ]
    with pytest.raises(ValueError, match="--input_file not found"):
        read_examples(str(tmp_path / "missing.txt"))


@pytest.mark.parametrize(
    "extra,message",
    [
        (
            ["--layers=-1,5", "--max_seq_length=16"],
            "--layers index 5 is out of range for a model with 3 layers",
        ),
        (
            ["--max_seq_length=65"],
            "Cannot use sequence length 65 because the BERT model was only "
            "trained up to sequence length 64",
        ),
    ],
)
def test_bad_flags_are_clear_errors(original_gelu, tmp_path, extra, message):
    cmd = [
        sys.executable,
        os.path.join(REPO, "extract_features.py"),
        "--input_file",
        "x",
        "--output_file",
        str(tmp_path / "o"),
        "--vocab_file",
        "v",
        "--bert_config_file",
        original_gelu["config"],
        "--init_checkpoint",
        "c",
        *extra,
    ]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert message in result.stderr
    assert not os.path.exists(tmp_path / "o")
