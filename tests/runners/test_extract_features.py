"""extract_features.py against the original's example reading, features, model outputs and
JSON writer."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from data.extraction.features import format_json_line, read_examples, round_6, value_lists
from data.tokenization.full_tokenizer import FullTokenizer
from jobs.extraction_run import ExtractionRun, extract_features
from modeling.config import BertConfig
from tests.helpers.paths import REPO
from tests.oracles import run_oracle
from training import inference
from training.strategy import create_strategy

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


def _vocab(path, size, extra=()):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *extra]
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
        # The original's TPU flag: accepted, and said to be ignored.
        "--use_tpu=False",
    ]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(work / "original" / "features.json") as f:
        features = json.load(f)
    return {
        "work": work,
        "config": original_gelu["config"],
        "ckpt": original_gelu["ckpt"],
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


def test_the_original_tpu_flags_are_accepted_and_said_to_be_ignored(extracted):
    assert "--use_tpu=False is ignored: extract_features runs on this machine" in extracted["log"]
    assert "--master" not in extracted["log"]  # not given, not mentioned


def test_full_length_batches_give_the_same_lines(extracted):
    """--pad_to_max_seq_length (every batch at the full length, in input order) against the
    default (lines sorted by length, batches cut to their longest): the same JSON, values
    equal to the 6 decimals written except where float rounding flips the last one."""
    work = extracted["work"]
    cmd = [
        sys.executable,
        os.path.join(REPO, "extract_features.py"),
        f"--input_file={work / 'input.txt'}",
        f"--vocab_file={work / 'vocab.txt'}",
        f"--bert_config_file={extracted['config']}",
        f"--init_checkpoint={extracted['ckpt']}",
        "--max_seq_length=16",
        "--layers=-1,0,-2",
        f"--output_file={work / 'full.jsonl'}",
        "--batch_size=3",
        "--pad_to_max_seq_length",
    ]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    full = (work / "full.jsonl").read_text(encoding="utf-8").splitlines()
    diffs = _value_differences(extracted["lines"], full)
    assert diffs.max() <= 1.01e-6  # one unit of the last decimal at most
    # A value flips when the rounding difference (a few float32 ulps, about 1e-7 at these
    # magnitudes) straddles a half of the 6th decimal: a few percent of the values (2.6% here).
    assert (diffs > 0).sum() <= 0.05 * diffs.size, ((diffs > 0).sum(), diffs.size)


def _value_differences(lines, other_lines):
    """|a - b| of every value of two outputs, after checking they hold the same lines, tokens
    and layers."""
    diffs = []
    for a, b in zip(lines, other_lines, strict=True):
        a, b = json.loads(a), json.loads(b)
        assert a["linex_index"] == b["linex_index"]
        assert [t["token"] for t in a["features"]] == [t["token"] for t in b["features"]]
        for ta, tb in zip(a["features"], b["features"], strict=True):
            for la, lb in zip(ta["layers"], tb["layers"], strict=True):
                assert la["index"] == lb["index"]
                diffs.append(np.abs(np.array(la["values"]) - np.array(lb["values"])))
    return np.concatenate(diffs)


def test_bfloat16_extraction_tracks_float32(extracted, tmp_path):
    """--precision=mixed_bfloat16: the same lines and tokens; values within bfloat16's
    rounding of the float32 run (8 significant bits per product, over two layers)."""
    import keras

    work = extracted["work"]
    run = ExtractionRun(
        input_file=str(work / "input.txt"),
        output_file=str(tmp_path / "bf16.jsonl"),
        init_checkpoint=extracted["ckpt"],
        layers=[-1, 0, -2],
        max_seq_length=16,
        batch_size=3,
        jit_compile=False,
        pad_to_max_seq_length=False,
        precision="mixed_bfloat16",
    )
    tokenizer = FullTokenizer(str(work / "vocab.txt"), True)
    config = BertConfig.from_json_file(extracted["config"])
    extract_features(run, config, tokenizer, create_strategy("one_device"))
    # The policy of the run does not outlive it.
    assert keras.mixed_precision.global_policy().name == "float32"
    bf16 = (tmp_path / "bf16.jsonl").read_text(encoding="utf-8").splitlines()
    diffs = _value_differences(extracted["lines"], bf16)
    # LayerNorm outputs are O(1); bfloat16 keeps 8 bits (relative 2**-8 = 0.004 per rounding).
    assert 0 < diffs.max() <= 0.08 and diffs.mean() <= 0.01, (diffs.max(), diffs.mean())


def test_first_examples_are_logged_like_the_original(extracted):
    first = extracted["features"][0]
    assert "*** Example ***" in extracted["log"]
    assert "tokens: " + " ".join(first["tokens"]) in extracted["log"]
    assert "input_type_ids: " + " ".join(map(str, first["input_type_ids"])) in extracted["log"]


# Words that keep non-ASCII characters through lower-casing and accent stripping, so that the
# writer meets tokens that json.dumps escapes (\u00df, \u4e2d, a surrogate pair for the emoji).
NON_ASCII_WORDS = ["stra\u00dfe", "\u4e2d", "\u03bb\u03bf\u03b3\u03bf\u03c2", "\U0001f600"]
WRITER_LINES = [
    *LINES,
    "Stra\u00dfe \u4e2d \u03bb\u03cc\u03b3\u03bf\u03c2 \U0001f600 ||| the caf\u00e9 \u4e2d",
]
WRITER_LAYERS = [-1, 0, -2]
WRITER_SEQ_LENGTH = 32
# Values whose JSON text is easy to get wrong: signed zeros (and values that round to -0.0),
# float32 denormals, exact binary ties at the 7th decimal (odd multiples of 1/128, which Python's
# round takes to the even neighbour), near-ties, magnitudes whose repr needs an exponent, the
# float32 extremes and non-finite values (json.dumps writes NaN and Infinity).
SPECIAL_VALUES = [
    -0.0,
    0.0,
    1e-7,
    -1e-7,
    4.9e-7,
    5e-7,
    -5e-7,
    5.1e-7,
    1e-45,
    -1e-45,
    1.1754944e-38,
    0.0078125,
    -0.0078125,
    0.0234375,
    1.0000005,
    0.1234565,
    -2.5000005,
    0.9999995,
    123456.7890625,
    1e7,
    16777217.0,
    3.4028235e38,
    -3.4028235e38,
    1e-20,
    1e20,
    float("inf"),
    float("-inf"),
    float("nan"),
]


def _awkward_activations(num_examples, seq_length, hidden_size, num_layers, seed=0):
    """float32 [N, S, H] per layer; each (example, layer) gets one kind of awkward values, and
    the first token of every example carries all of SPECIAL_VALUES."""
    rng = np.random.default_rng(seed)
    shape = (seq_length, hidden_size)
    kinds = [
        lambda: rng.standard_normal(shape),
        # Exact ties at the 7th decimal: odd multiples of 1/128.
        lambda: (2 * rng.integers(-(2**12), 2**12, shape) + 1) / 128,
        # Decimal near-ties x.xxxxxx5, which float32 puts on either side of the tie.
        lambda: (rng.integers(-(10**7), 10**7, shape) + 0.5) / 1e6,
        # Mostly rounded to 0.0 or -0.0.
        lambda: rng.standard_normal(shape) * 1e-7,
        lambda: rng.standard_normal(shape) * 10.0 ** rng.uniform(3, 37, shape),
        lambda: rng.standard_normal(shape) * 1e-3,
    ]
    layers = []
    for j in range(num_layers):
        values = np.stack([kinds[(u + j) % len(kinds)]() for u in range(num_examples)])
        values = values.astype(np.float32)
        values[:, 0, :] = np.resize(np.array(SPECIAL_VALUES, np.float32), hidden_size)
        layers.append(values)
    return layers


@pytest.fixture(scope="module")
def written(original_gelu, tmp_path_factory):
    """The original main()'s output file for WRITER_LINES, with the model's activations replaced
    by _awkward_activations, and what our run needs to write the same file."""
    work = tmp_path_factory.mktemp("writer")
    _vocab(work / "vocab.txt", 99, NON_ASCII_WORDS)
    (work / "input.txt").write_text("\n".join(WRITER_LINES) + "\n", encoding="utf-8")
    with open(original_gelu["config"]) as f:
        hidden_size = json.load(f)["hidden_size"]
    activations = _awkward_activations(
        len(WRITER_LINES), WRITER_SEQ_LENGTH, hidden_size, len(WRITER_LAYERS)
    )
    np.savez(
        work / "activations.npz",
        **{f"layer_output_{j}": values for j, values in enumerate(activations)},
    )
    run_oracle(
        "original_extract_writer",
        [
            "--activations",
            work / "activations.npz",
            "--input_file",
            work / "input.txt",
            "--output_file",
            work / "original.jsonl",
            "--vocab_file",
            work / "vocab.txt",
            "--bert_config_file",
            original_gelu["config"],
            "--init_checkpoint",
            original_gelu["ckpt"],
            "--max_seq_length",
            WRITER_SEQ_LENGTH,
            "--layers=" + ",".join(map(str, WRITER_LAYERS)),
            "--batch_size",
            3,
        ],
    )
    return {
        "work": work,
        "activations": activations,
        "original": (work / "original.jsonl").read_bytes(),
    }


def test_original_writer_met_the_awkward_cases(written):
    text = written["original"].decode("ascii")
    lines = text.splitlines()
    assert len(lines) == len(WRITER_LINES)
    records = [json.loads(line) for line in lines]
    assert [r["linex_index"] for r in records] == list(range(len(WRITER_LINES)))
    lengths = [len(r["features"]) for r in records]
    assert min(lengths) == 2 and max(lengths) == WRITER_SEQ_LENGTH
    tokens = [t["token"] for t in records[-1]["features"]]
    assert [w for w in NON_ASCII_WORDS if w in tokens] == NON_ASCII_WORDS
    for needle in ("-0.0,", "NaN", "-Infinity", "e+38", "e-06", "\\u00df", "\\ud83d\\ude00"):
        assert needle in text, needle


def test_vectorised_rounding_equals_python_round():
    """round_6 against the original's `round(float(x), 6)` on every awkward kind of value
    (ties at the 7th decimal, near-ties, signed zeros, denormals, huge, non-finite)."""
    layers = _awkward_activations(6, 64, 128, 6, seed=1)
    for values in layers:
        flat = values.reshape(-1, values.shape[-1])
        got = round_6(flat)
        want = [[round(v, 6) for v in row] for row in flat.tolist()]
        # repr tells -0.0 from 0.0 and matches nan with nan: what json.dumps writes.
        assert [list(map(repr, r)) for r in got] == [list(map(repr, r)) for r in want]


def test_value_text_equals_json_dumps():
    """value_lists writes each row as json.dumps writes the rounded floats: the awkward kinds,
    and values below 1e-4, which repr writes with an exponent ("1.2e-05", "-7e-06")."""
    layers = _awkward_activations(6, 64, 128, 6, seed=2)
    rng = np.random.default_rng(3)
    layers += [(rng.standard_normal((64, 96)) * scale).astype(np.float32) for scale in (1e-5, 1e4)]
    for values in layers:
        flat = values.reshape(-1, values.shape[-1])
        want = [json.dumps(row)[1:-1] for row in round_6(flat)]
        assert value_lists(flat) == want
    assert "e-05" in "".join(value_lists(layers[-2])) and "e-06" in "".join(value_lists(layers[-2]))


def test_json_line_format_is_byte_exact(written):
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
    # The original's own writer (its main() on the same activations) is the reference; only
    # the tokens are taken from its file, so that the line format alone is compared.
    ours = []
    for original_line in written["original"].decode("ascii").splitlines():
        record = json.loads(original_line)
        unique_id = record["linex_index"]
        tokens = [t["token"] for t in record["features"]]
        layer_values = [values[unique_id] for values in written["activations"]]
        ours.append(format_json_line(unique_id, tokens, WRITER_LAYERS, layer_values) + "\n")
    assert "".join(ours).encode("utf-8") == written["original"]


def test_extraction_writes_the_original_bytes(written, original_gelu, monkeypatch):
    activations = written["activations"]

    def supplied_predictions(predict_step, batches, progress=None):
        # The model's outputs replaced by the activations the original was given, batch by batch
        # in input order (row u is the example of line u: --pad_to_max_seq_length keeps it).
        start = 0
        for batch in batches:
            stop = start + int(batch["input_ids"].shape[0])
            yield {f"layer_{j}": values[start:stop] for j, values in enumerate(activations)}
            start = stop
        assert start == len(WRITER_LINES)

    monkeypatch.setattr(inference, "predictions", supplied_predictions)
    work = written["work"]
    run = ExtractionRun(
        input_file=str(work / "input.txt"),
        output_file=str(work / "ours.jsonl"),
        init_checkpoint=original_gelu["ckpt"],
        layers=WRITER_LAYERS,
        max_seq_length=WRITER_SEQ_LENGTH,
        batch_size=3,
        jit_compile=False,
        pad_to_max_seq_length=True,
    )
    tokenizer = FullTokenizer(str(work / "vocab.txt"), True)
    config = BertConfig.from_json_file(original_gelu["config"])
    assert extract_features(run, config, tokenizer, create_strategy("one_device")) == len(
        WRITER_LINES
    )
    assert (work / "ours.jsonl").read_bytes() == written["original"]


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
