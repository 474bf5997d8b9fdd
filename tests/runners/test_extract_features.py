"""extract_features.py against the original's example reading, features, model outputs and
JSON writer."""

import json
import os
import sys

import numpy as np
import pytest

from data.extraction.features import format_json_line, iter_examples, round_6, value_lists
from data.tokenization.full_tokenizer import FullTokenizer
from jobs.extraction_run import ExtractionRun, extract_features
from modeling.config import BertConfig
from tests.helpers.paths import REPO
from tests.helpers.scripts import run_in_repo
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
    result = run_in_repo(cmd, timeout=300)
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


@pytest.mark.slow
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


def _extract_command(extracted, *extra):
    """extract_features.py on the module's input, vocabulary and checkpoint at length 16 with
    `extra` flags; returns the finished process (exit status 0 checked)."""
    work = extracted["work"]
    cmd = [
        sys.executable,
        os.path.join(REPO, "extract_features.py"),
        f"--input_file={work / 'input.txt'}",
        f"--vocab_file={work / 'vocab.txt'}",
        f"--bert_config_file={extracted['config']}",
        f"--init_checkpoint={extracted['ckpt']}",
        "--max_seq_length=16",
        *extra,
    ]
    result = run_in_repo(cmd, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.mark.slow
def test_full_length_batches_give_the_same_lines(extracted):
    """--pad_to_max_seq_length (every batch at the full length, in input order) against the
    default (lines sorted by length, batches cut to their longest): the same JSON, values
    equal to the 6 decimals written except where float rounding flips the last one."""
    work = extracted["work"]
    _extract_command(
        extracted,
        "--layers=-1,0,-2",
        f"--output_file={work / 'full.jsonl'}",
        "--batch_size=3",
        "--pad_to_max_seq_length",
    )
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


def test_examples_split_on_the_last_separator(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a ||| b ||| c\n\nplain \xff text\n")
    assert list(iter_examples(str(path))) == [
        (0, "a ||| b", "c"),
        (1, "", None),
        (2, "plain  text", None),
    ]
    with pytest.raises(ValueError, match="--input_file not found"):
        list(iter_examples(str(tmp_path / "missing.txt")))


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
            "trained up to sequence length 64: pass --max_seq_length=64 or less "
            "(max_position_embeddings in --bert_config_file).",
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
    result = run_in_repo(cmd, timeout=300)
    assert result.returncode != 0
    assert message in result.stderr
    assert not os.path.exists(tmp_path / "o")


# --- Pooled, combined and binary outputs, windows over long lines, streaming -----------------


def _run(extracted, tmp_path, name="out", input_file=None, **settings):
    """extract_features in this process on the module's tiny model; returns the output path."""
    work = extracted["work"]
    fields = dict(
        input_file=str(input_file or work / "input.txt"),
        output_file=str(tmp_path / name),
        init_checkpoint=extracted["ckpt"],
        layers=[-1, 0, -2],
        max_seq_length=16,
        batch_size=3,
        jit_compile=False,
        pad_to_max_seq_length=False,
    )
    fields.update(settings)
    tokenizer = FullTokenizer(str(work / "vocab.txt"), True)
    config = BertConfig.from_json_file(extracted["config"])
    extract_features(ExtractionRun(**fields), config, tokenizer, create_strategy("one_device"))
    return fields["output_file"]


def _json_values(lines):
    """The per-token JSON output as (tokens, [float64 [T, H] per layer]) per line."""
    parsed = []
    for line in lines:
        features = json.loads(line)["features"]
        tokens = [t["token"] for t in features]
        num_layers = len(features[0]["layers"])
        layers = [np.array([t["layers"][j]["values"] for t in features]) for j in range(num_layers)]
        parsed.append((tokens, layers))
    return parsed


def _numpy_pooling(layers, pooling, combine):
    """Pooling written independently of data/extraction/pooling.py, on the JSON's values."""
    combined = np.concatenate(layers, axis=1) if combine == "concatenate" else sum(layers) / 3
    return {"mean": combined.mean(0), "max": combined.max(0), "cls": combined[0]}[pooling]


@pytest.mark.parametrize("combine", ["concatenate", "mean"])
@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
def test_pooled_vectors_equal_numpy_pooling_of_the_json(extracted, tmp_path, pooling, combine):
    path = _run(
        extracted, tmp_path, "out.npy", pooling=pooling, layer_combine=combine, output_format="npy"
    )
    pooled = np.load(path)
    parsed = _json_values(extracted["lines"])
    assert pooled.dtype == np.float32 and pooled.shape[0] == len(parsed)
    for row, (_, layers) in zip(pooled, parsed, strict=True):
        np.testing.assert_allclose(row, _numpy_pooling(layers, pooling, combine), atol=1e-5)


def test_pooled_json_lines_and_first_last_mean(extracted, tmp_path):
    """jsonl pooled: {"linex_index", "tokens", "values"} per line; first_last_mean is the mean
    over tokens of the average of layers 0 and -1 (the runner's setting of it)."""
    path = _run(
        extracted, tmp_path, layers=[0, -1], layer_combine="mean", pooling="first_last_mean"
    )
    records = [json.loads(line) for line in open(path, encoding="utf-8")]
    parsed = _json_values(extracted["lines"])
    for i, (record, (tokens, layers)) in enumerate(zip(records, parsed, strict=True)):
        assert list(record) == ["linex_index", "tokens", "values"]
        assert record["linex_index"] == i and record["tokens"] == tokens
        # --layers=-1,0,-2 in the module's run: layers[1] is layer 0, layers[0] layer -1.
        expected = ((layers[1] + layers[0]) / 2).mean(0)
        np.testing.assert_allclose(record["values"], expected, atol=1e-5)
        assert all(v == round(v, 6) for v in record["values"])


def test_per_token_mean_of_layers_in_json(extracted, tmp_path):
    path = _run(extracted, tmp_path, layer_combine="mean")
    for line, (tokens, layers) in zip(open(path), _json_values(extracted["lines"]), strict=True):
        features = json.loads(line)["features"]
        assert [t["token"] for t in features] == tokens
        assert [[layer["index"] for layer in t["layers"]] for t in features][0] == [[-1, 0, -2]]
        values = np.array([t["layers"][0]["values"] for t in features])
        np.testing.assert_allclose(values, sum(layers) / 3, atol=1.5e-6)


def _per_token_json(extracted):
    """[total_tokens, 3H] float64 (layers side by side), the offsets and tokens of the JSON."""
    parsed = _json_values(extracted["lines"])
    values = np.concatenate([np.concatenate(layers, axis=1) for _, layers in parsed])
    offsets = np.cumsum([0] + [len(tokens) for tokens, _ in parsed])
    return values, offsets, [tokens for tokens, _ in parsed]


def test_npy_safetensors_and_tfrecord_hold_the_json_values(extracted, tmp_path):
    import tensorflow as tf
    from safetensors import safe_open

    values, offsets, tokens = _per_token_json(extracted)
    # npy per token: values, offsets and tokens beside them.
    _run(extracted, tmp_path, "tokens.npy", output_format="npy")
    np.testing.assert_allclose(np.load(tmp_path / "tokens.npy"), values, atol=1e-6)
    np.testing.assert_array_equal(np.load(tmp_path / "tokens.offsets.npy"), offsets)
    written = (tmp_path / "tokens.tokens.txt").read_text(encoding="utf-8").splitlines()
    assert [line.split(" ") for line in written] == tokens
    # safetensors in float16, per token and pooled.
    _run(extracted, tmp_path, "t.safetensors", output_format="safetensors", output_dtype="float16")
    with safe_open(str(tmp_path / "t.safetensors"), "np") as f:
        half, half_offsets = f.get_tensor("values"), f.get_tensor("offsets")
        assert f.metadata()["layers"] == "-1,0,-2"
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half_offsets, offsets)
    # float16 keeps 11 significant bits: within half a unit of the last one, plus the JSON's.
    np.testing.assert_allclose(half, values, rtol=2**-11, atol=1e-6)
    _run(extracted, tmp_path, "p.safetensors", output_format="safetensors", pooling="mean")
    with safe_open(str(tmp_path / "p.safetensors"), "np") as f:
        pooled = f.get_tensor("values")
    assert not (tmp_path / "p.tokens.txt").exists()
    expected = [values[a:b].mean(0) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    np.testing.assert_allclose(pooled, expected, atol=1e-6)
    # TFRecord, parsed as docs/features.md shows.
    _run(extracted, tmp_path, "t.tfrecord", output_format="tfrecord")
    spec = {
        "linex_index": tf.io.FixedLenFeature([], tf.int64),
        "tokens": tf.io.VarLenFeature(tf.string),
        "values": tf.io.VarLenFeature(tf.float32),
    }
    records = list(tf.data.TFRecordDataset(str(tmp_path / "t.tfrecord")))
    assert len(records) == len(tokens)
    for i, record in enumerate(records):
        example = tf.io.parse_single_example(record, spec)
        assert int(example["linex_index"]) == i
        line_tokens = [t.decode() for t in tf.sparse.to_dense(example["tokens"]).numpy()]
        assert line_tokens == tokens[i]
        line = tf.reshape(tf.sparse.to_dense(example["values"]), [len(line_tokens), -1])
        np.testing.assert_allclose(line.numpy(), values[offsets[i] : offsets[i + 1]], atol=1e-6)


# Single-piece words of the vocabulary, so that a window's pieces written as a line are
# tokenized back into exactly that window.
_PLAIN_WORDS = ["the", "cat", "sat", "on", "mat", "jim", "henson", "was", "a", "who"]


def _independent_windows(num_pieces, room, stride):
    """Window starts and lengths, and for each piece the window of most context: the run_squad
    rule (smaller side context + 0.01 * window length, first best) written over arrays."""
    starts = [0]
    while starts[-1] + room < num_pieces:
        starts.append(starts[-1] + stride)
    lengths = [min(room, num_pieces - s) for s in starts]
    position = np.arange(num_pieces)[:, np.newaxis]
    start, length = np.array(starts)[np.newaxis], np.array(lengths)[np.newaxis]
    inside = (position >= start) & (position < start + length)
    score = np.minimum(position - start, start + length - 1 - position) + 0.01 * length
    best = np.argmax(np.where(inside, score, -np.inf), axis=1)  # argmax: the first best
    return starts, lengths, best


def test_long_lines_take_each_token_from_its_max_context_window(extracted, tmp_path):
    """A 40-piece line in windows of 14 pieces, stride 5: against the model run on each
    window's text (the non-windowed path) and the rule applied here; short lines as they are
    without windows; mean pooling over all 42 token rows."""
    rng = np.random.default_rng(7)
    pieces = list(rng.choice(_PLAIN_WORDS, 40))
    short = ["the cat sat on the mat", "", "jim henson was a puppeteer"]
    lines = [short[0], " ".join(pieces), *short[1:]]
    (tmp_path / "long.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    starts, lengths, best = _independent_windows(len(pieces), 16 - 2, 5)
    assert len(starts) == 7 and lengths[-1] < 14 and len(set(best.tolist())) == 7
    window_lines = [" ".join(pieces[s : s + n]) for s, n in zip(starts, lengths, strict=True)]
    (tmp_path / "windows.txt").write_text("\n".join(window_lines + short) + "\n", "utf-8")
    common = dict(output_format="npy", layers=[-1, 0])
    _run(extracted, tmp_path, "long.npy", input_file=tmp_path / "long.txt", doc_stride=5, **common)
    _run(extracted, tmp_path, "windows.npy", input_file=tmp_path / "windows.txt", **common)
    got, got_offsets = np.load(tmp_path / "long.npy"), np.load(tmp_path / "long.offsets.npy")
    rows, row_offsets = np.load(tmp_path / "windows.npy"), np.load(tmp_path / "windows.offsets.npy")
    window_rows = [rows[row_offsets[w] : row_offsets[w + 1]] for w in range(len(starts))]
    expected = [window_rows[0][0]]  # the first window's [CLS]
    for i, w in enumerate(best):
        expected.append(window_rows[w][i - starts[w] + 1])
    expected.append(window_rows[-1][-1])  # the last window's [SEP]
    long_line = got[got_offsets[1] : got_offsets[2]]
    assert long_line.shape[0] == len(pieces) + 2
    np.testing.assert_allclose(long_line, np.array(expected), atol=1e-6)
    tokens = (tmp_path / "long.tokens.txt").read_text().splitlines()
    assert tokens[1].split() == ["[CLS]", *pieces, "[SEP]"]
    # Lines that fit one window: the rows they get without windows.
    for line, window_line in ((0, 7), (2, 8), (3, 9)):
        np.testing.assert_allclose(
            got[got_offsets[line] : got_offsets[line + 1]],
            rows[row_offsets[window_line] : row_offsets[window_line + 1]],
            atol=1e-6,
        )
    _run(
        extracted,
        tmp_path,
        "mean.npy",
        input_file=tmp_path / "long.txt",
        doc_stride=5,
        pooling="mean",
        **common,
    )
    np.testing.assert_allclose(np.load(tmp_path / "mean.npy")[1], long_line.mean(0), atol=1e-6)


def test_a_line_that_fits_gets_the_same_row_with_windows():
    from data.extraction.stream import plan_line

    tokenizer_vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}

    class Tokenizer:
        def tokenize(self, text):
            return text.split()

        def convert_tokens_to_ids(self, tokens):
            return [tokenizer_vocab[t] for t in tokens]

    example = (4, "the cat sat on the mat", None)
    plain, plain_features = plan_line(example, 8, Tokenizer())
    windowed, windowed_features = plan_line(example, 8, Tokenizer(), doc_stride=2)
    assert windowed == plain and windowed_features == plain_features


def test_lines_stream_through_in_order(extracted, tmp_path, monkeypatch):
    """Far more lines than one sorting window (64 batches of 2 = 128 rows): the job holds a
    bounded number of lines, and writes them in input order."""
    from jobs import extraction_run

    streams = []

    class Recorded(extraction_run.LineStream):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            streams.append(self)

    monkeypatch.setattr(extraction_run, "LineStream", Recorded)
    single = [line for line in LINES if "|||" not in line]
    lines = [single[i % len(single)] + " the" * (i % 5) for i in range(600)]
    (tmp_path / "many.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = _run(
        extracted,
        tmp_path,
        "many.jsonl",
        input_file=tmp_path / "many.txt",
        batch_size=2,
        pooling="cls",
    )
    records = [json.loads(line) for line in open(path, encoding="utf-8")]
    assert [r["linex_index"] for r in records] == list(range(len(lines)))
    tokenizer = FullTokenizer(str(extracted["work"] / "vocab.txt"), True)
    for record, line in zip(records, lines, strict=True):
        assert record["tokens"] == ["[CLS]", *tokenizer.tokenize(line)[:14], "[SEP]"]
    assert 0 < streams[0].max_pending < len(lines) // 2, streams[0].max_pending


def test_a_failed_run_writes_nothing(extracted, tmp_path, monkeypatch):
    from data.extraction import writers
    from fileio.errors import UserError

    class Failing(writers.NpyWriter):
        def write(self, unique_id, tokens, values):
            if unique_id == 3:
                raise OSError("disk gone")
            super().write(unique_id, tokens, values)

    monkeypatch.setattr(writers, "NpyWriter", Failing)
    with pytest.raises(OSError, match="disk gone"):
        _run(extracted, tmp_path, name="out.npy", output_format="npy")
    # A pair with --doc_stride: refused before the model is built.
    with pytest.raises(UserError, match="--doc_stride windows single sentences only"):
        _run(extracted, tmp_path, name="pairs.npy", output_format="npy", doc_stride=4)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "extra,message",
    [
        (
            ["--output_dtype=float16"],
            "--output_dtype=float16 has no meaning for --output_format=jsonl",
        ),
        (
            ["--output_format=tfrecord", "--output_dtype=float16"],
            "--output_dtype=float16 cannot be written with --output_format=tfrecord",
        ),
        (
            ["--pooling=first_last_mean", "--layers=-1,-2"],
            "--pooling=first_last_mean reads the first and last encoder layers",
        ),
        (["--doc_stride=0", "--max_seq_length=16"], "--doc_stride=0 must be at least 1"),
    ],
)
def test_output_flags_that_cannot_work_are_refused_first(original_gelu, tmp_path, extra, message):
    cmd = [
        sys.executable,
        os.path.join(REPO, "extract_features.py"),
        "--input_file=x",
        f"--output_file={tmp_path / 'o'}",
        "--vocab_file=v",
        f"--bert_config_file={original_gelu['config']}",
        "--init_checkpoint=c",
        *extra,
    ]
    result = run_in_repo(cmd, timeout=300)
    assert result.returncode != 0
    assert message in result.stderr.strip().splitlines()[-1], result.stderr[-2000:]
    assert "tensorflow" not in result.stderr.lower()  # refused before TensorFlow loads
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_first_last_mean_from_the_command_line(extracted, tmp_path):
    """The runner's first_last_mean: layers 0 and -1 averaged, then the tokens, whatever the
    default --layers (-1..-4 do not all exist in this 3-layer model)."""
    result = _extract_command(
        extracted,
        f"--output_file={tmp_path / 'flm.npy'}",
        "--pooling=first_last_mean",
        "--output_format=npy",
        "--output_dtype=float16",
    )
    assert "extract: 7/7 lines" in result.stderr
    vectors = np.load(tmp_path / "flm.npy")
    assert vectors.dtype == np.float16
    for row, (_, layers) in zip(vectors, _json_values(extracted["lines"]), strict=True):
        # --layers=-1,0,-2 in the module's run: layers[1] is layer 0, layers[0] layer -1.
        expected = ((layers[1] + layers[0]) / 2).mean(0)
        np.testing.assert_allclose(row, expected, rtol=2**-11, atol=1e-6)
