"""create_pretraining_data: record-identical to the original (bert-tensorflow), fast mode stats.

The original `bert.create_pretraining_data` runs once, in a child process, for every flag set
below on a corpus this module generates (a few hundred documents with one-sentence documents,
runs of blank and whitespace-only lines, very long sentences, CJK and accented text, carriage
returns and files that do not end in a blank line). Whole-word masking postdates bert-tensorflow,
so it is checked by its properties and by a small case worked out by hand from
original_release.md §5.4.
"""

import collections
import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from data.pretraining import fast as fast_mode
from data.pretraining.corpus import LineTokenizer, Vocabulary
from data.pretraining.create import create_pretraining_data
from data.pretraining.masking import create_masked_lm_predictions, sample_masked_lm_predictions
from tests.helpers.paths import REPO
from tests.helpers.pretraining_options import pretraining_options
from tests.oracles import oracle_env, run_oracle

_WORDS = (
    "the of and to in a is was for on that with as by it he she they were from at his her this "
    "an are be had which or first new city state year war time world school after also river "
    "film music team game book king church university water century people house south north "
    "early known life part made series national played history two three group area village "
    "family station army art law road island language party season club"
).split()
_SUFFIXES = "s ed ing ly er est tion al ness ment".split()
_SYLLABLES = "bra qui zon tel mar fen lo ri ka ste vol dun pha gri".split()
_ODD_WORDS = ["café", "naïve", "Über", "北京", "√2", "straße", "e-mail", "U.S.", "1999", "x²"]
_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"


def _write_vocab(path):
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(5)] + ["[UNK]", "[CLS]", "[SEP]"]
    tokens += ["[MASK]", *".,;:!?'\"()-", *_LETTERS, *(f"##{c}" for c in _LETTERS)]
    tokens += _WORDS + [f"##{s}" for s in _SUFFIXES]
    # No repeats: bert-tensorflow numbers repeated lines differently from the final release.
    tokens = list(dict.fromkeys(tokens))
    with open(path, "w", encoding="utf-8") as writer:
        writer.write("\n".join(tokens) + "\n")


def _sentence(rng):
    length = rng.randint(80, 160) if rng.random() < 0.02 else rng.randint(3, 14)
    words = []
    for _ in range(length):
        draw = rng.random()
        if draw < 0.7:
            word = rng.choice(_WORDS) + (rng.choice(_SUFFIXES) if rng.random() < 0.2 else "")
        elif draw < 0.93:
            word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3)))
        else:
            word = rng.choice(_ODD_WORDS)
        words.append(word.capitalize() if rng.random() < 0.1 else word)
        if rng.random() < 0.08:
            words[-1] += ","
    return " ".join(words) + rng.choice(".!?.")


def _documents(rng, count):
    documents = []
    for _ in range(count):
        sentences = 1 if rng.random() < 0.15 else rng.randint(2, 8)
        documents.append([_sentence(rng) for _ in range(sentences)])
    # Lines that are not plain sentences: dropped (control characters only), split on by
    # whitespace (U+2028) and carriage returns that the original's readline deletes.
    documents[3].insert(1, "\x00\x01")
    documents[4][0] = "  leading and trailing spaces\u2028with a line separator  "
    documents[5][0] = "a carriage\rreturn inside a line"
    return documents


def _text(documents, rng):
    parts = []
    for sentences in documents:
        parts.append("\n".join(sentences) + "\n")
        parts.append(rng.choice(["\n", "\n", "\n", "\n\n", "   \t\n", "\u3000\n", "\r\n"]))
    return "".join(parts)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Vocabulary and text files: `all.txt`, and `part_1..3.txt` holding three stretches of
    documents where part 1 and part 3 end without a blank line (part 3 without a newline)."""
    root = tmp_path_factory.mktemp("pretraining_corpus")
    rng = random.Random(2024)
    vocab = root / "vocab.txt"
    _write_vocab(vocab)
    (root / "all.txt").write_text(_text(_documents(rng, 300), rng), encoding="utf-8")
    part_docs = _documents(rng, 90)
    texts = [_text(part_docs[i : i + 30], rng) for i in (0, 30, 60)]
    texts[0] = texts[0].rstrip() + "\n"
    texts[2] = texts[2].rstrip()
    for index, text in enumerate(texts, 1):
        (root / f"part_{index}.txt").write_bytes(text.encode("utf-8"))
    raw = (root / "all.txt").read_bytes().split(b"\n")
    raw[7] = b"\xff\xfe" + raw[7] + b"\xc3"
    raw[12] = b"\x80\x81"  # nothing valid: an empty line, so a document break
    raw[20] = raw[20][:5] + b"\xe2\x82" + raw[20][5:]
    (root / "invalid.txt").write_bytes(b"\n".join(raw))
    (root / "invalid_cleaned.txt").write_bytes(
        b"\n".join(raw).decode("utf-8", "ignore").encode("utf-8")
    )
    return root


# name -> (input files relative to the corpus, number of outputs, flags); unnamed flags take
# the original's defaults.
_SHORT = dict(max_seq_length=24, max_predictions_per_seq=5, short_seq_prob=0.9, dupe_factor=2)
_FLAG_SETS = {
    "defaults": ("all.txt", 1, {}),
    "multiple_inputs": ("part_[12].txt,part_3.txt", 1, dict(dupe_factor=2, random_seed=1)),
    "multiple_outputs": ("all.txt", 3, dict(dupe_factor=2)),
    "short_sequences": ("all.txt", 1, _SHORT),
    "dupe_1_seed_1": ("all.txt", 2, dict(dupe_factor=1, random_seed=1)),
    "dupe_3_prob_0.2": ("all.txt", 1, dict(dupe_factor=3, masked_lm_prob=0.2)),
    "cased_seed_12345": ("all.txt", 1, dict(dupe_factor=1, do_lower_case=False)),
    "invalid_utf8": ("invalid.txt", 1, dict(dupe_factor=1)),
    # Settings the original ran although they are rarely meant: the runner warns, the records
    # stay the original's.
    "unusual_probabilities": (
        "all.txt",
        1,
        dict(
            _SHORT,
            dupe_factor=1,
            masked_lm_prob=1.5,
            short_seq_prob=-0.5,
            max_predictions_per_seq=30,
        ),
    ),
    "no_masked_piece": ("all.txt", 1, dict(dupe_factor=1, max_predictions_per_seq=0)),
    "no_pass": ("all.txt", 2, dict(dupe_factor=0)),
}


def _outputs(directory, name, count):
    return [str(directory / f"{name}_{i}.tfrecord") for i in range(count)]


@pytest.fixture(scope="module")
def original(corpus, tmp_path_factory):
    """Runs the original once for every flag set; returns name -> (outputs, log messages)."""
    out = tmp_path_factory.mktemp("original_pretraining")
    configs, results = [], {}
    for name, (inputs, num_outputs, flags) in _FLAG_SETS.items():
        # The original stops at the first invalid byte; it gets the text without them.
        inputs = inputs.replace("invalid.txt", "invalid_cleaned.txt")
        outputs = _outputs(out, name, num_outputs)
        config = {
            "input_file": ",".join(str(corpus / p) for p in inputs.split(",")),
            "output_file": ",".join(outputs),
            "vocab_file": str(corpus / "vocab.txt"),
            "log_file": str(out / f"{name}.log"),
        }
        configs.append({**config, **flags})
        results[name] = outputs
    (out / "configs.json").write_text(json.dumps(configs))
    run_oracle("original_pretraining_data", [out / "configs.json"])
    return {
        name: (outputs, (out / f"{name}.log").read_text(encoding="utf-8").splitlines())
        for name, outputs in results.items()
    }


def _records(paths):
    """Returns, per file, the list of (serialised record, {feature: (kind, values)})."""
    files = []
    for path in paths:
        records = []
        for raw in tf.compat.v1.io.tf_record_iterator(path):
            features = {}
            for key, feature in tf.train.Example.FromString(raw).features.feature.items():
                kind = feature.WhichOneof("kind")
                features[key] = (kind, list(getattr(feature, kind).value))
            records.append((raw, features))
        files.append(records)
    return files


def _run_ours(corpus, directory, name, num_workers=0, **overrides):
    inputs, num_outputs, flags = _FLAG_SETS[name]
    options = pretraining_options(**{**flags, **overrides})
    directory.mkdir(exist_ok=True)
    outputs = _outputs(directory, name, num_outputs)
    pattern = ",".join(str(corpus / p) for p in inputs.split(","))
    total = create_pretraining_data(
        pattern, ",".join(outputs), str(corpus / "vocab.txt"), options, num_workers
    )
    return outputs, total


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_FLAG_SETS))
def test_records_match_original(name, corpus, original, tmp_path, caplog):
    caplog.set_level("INFO", logger="absl")
    outputs, total = _run_ours(corpus, tmp_path, name)
    original_outputs, original_log = original[name]
    ours, theirs = _records(outputs), _records(original_outputs)
    assert [len(f) for f in ours] == [len(f) for f in theirs]
    assert total == sum(len(f) for f in theirs) > (-1 if name == "no_pass" else 100)
    for our_file, their_file in zip(ours, theirs, strict=True):
        for index, ((our_raw, our_features), (their_raw, their_features)) in enumerate(
            zip(our_file, their_file, strict=True)
        ):
            assert our_features == their_features, f"record {index}"
            # Same proto, serialised in sorted key order.
            canonical = tf.train.Example.FromString(their_raw).SerializeToString(deterministic=True)
            assert our_raw == canonical
    # The same log lines, up to the directories and the input the original was given.
    our_log = [r.getMessage() for r in caplog.records if r.name == "absl"]
    our_log = [m.replace(str(tmp_path), "OUT") for m in our_log]
    their_log = [m.replace(os.path.dirname(original_outputs[0]), "OUT") for m in original_log]
    their_log = [m.replace("invalid_cleaned.txt", "invalid.txt") for m in their_log]
    assert our_log == their_log
    assert sum(line == "*** Example ***" for line in our_log) == (0 if name == "no_pass" else 20)


def test_records_are_cls_a_sep_b_sep_within_max_seq_length(corpus, tmp_path):
    """The layout of every record (original_release.md §5): [CLS] A [SEP] B [SEP] in at most
    max_seq_length pieces, segment 0 through the first [SEP] and 1 through the second, zeros
    after; the quick twin of the record-for-record test for these rules."""
    outputs, _ = _run_ours(corpus, tmp_path, "short_sequences")
    max_seq_length = _SHORT["max_seq_length"]
    vocab = Vocabulary(str(corpus / "vocab.txt"))
    lengths = []
    for features in _features(outputs):
        ids, mask, segments = (features[k][1] for k in ("input_ids", "input_mask", "segment_ids"))
        assert len(ids) == len(mask) == len(segments) == max_seq_length
        length = sum(mask)
        assert mask == [1] * length + [0] * (max_seq_length - length)
        lengths.append(length)
        masked = _masked_labels(features)
        pieces = [masked.get(i, piece) for i, piece in enumerate(ids[:length])]
        seps = [i for i, piece in enumerate(pieces) if piece == vocab.sep_id]
        assert pieces[0] == vocab.cls_id and len(seps) == 2 and seps[1] == length - 1
        first = seps[0]
        expected = [0] * (first + 1) + [1] * (length - first - 1) + [0] * (max_seq_length - length)
        assert segments == expected
    # Long pairs fill max_seq_length exactly (the pair is cut to max_seq_length - 3 pieces).
    assert max(lengths) == max_seq_length


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_line_tokenizer_gives_the_original_ids(corpus, do_lower_case):
    from absl import flags
    from bert import tokenization as original_tokenization

    was_parsed = flags.FLAGS.is_parsed()
    if not was_parsed:  # the original reads FLAGS.preserve_unused_tokens
        flags.FLAGS.mark_as_parsed()
    try:
        expected = original_tokenization.FullTokenizer(str(corpus / "vocab.txt"), do_lower_case)
        ours = LineTokenizer(Vocabulary(str(corpus / "vocab.txt")), do_lower_case)
        lines = (corpus / "all.txt").read_text(encoding="utf-8").splitlines()
        lines += [
            "ab\x85cd ef\x0bgh ij\x1ckl",  # split by str.split, deleted by the tokenizer
            "a\u2028b c\u3000d e\xa0f g\u200bh",  # line separator, ideographic/nbsp spaces
            "ΟΔΟΣ Σ ΣΑΣ北京x İstanbul café\u0301 ﬁne",  # final sigma, CJK inside a word
            "\x00\ufffd\t tab\there [MASK] [CLS]",
        ]
        for line in lines:
            tokens = expected.tokenize(line)
            assert ours.ids(line) == expected.convert_tokens_to_ids(tokens), line
    finally:
        if not was_parsed:
            flags.FLAGS.unparse_flags()


def test_whole_word_masking_hand_worked_case(tmp_path):
    # original_release.md §5.4 by hand, seed 106, vocabulary of 13 tokens:
    # groups [1] [2,3] [4,5,6,8] [9]: "##ed" after [SEP] joins the word before it.
    # num_to_predict = min(20, max(1, int(round(11 * 0.3)))) = 3.
    # random.Random(106).shuffle(groups) -> [4,5,6,8], [2,3], [1], [9]:
    #   [4,5,6,8] would make 4 > 3: skipped, not stopped at;
    #   [2,3]: piece 2: random() = 0.057 < 0.8 -> [MASK];
    #          piece 3: random() = 0.806, random() = 0.804 >= 0.5, randint(0, 12) = 3 -> "[SEP]";
    #   [1]:   random() = 0.810, random() = 0.494 < 0.5 -> unchanged; then 3 chosen, stop.
    path = tmp_path / "vocab.txt"
    words = "[PAD] [UNK] [CLS] [SEP] [MASK] the river ##s team ##ing ##ly ##ed king".split()
    path.write_text("\n".join(words) + "\n", encoding="utf-8")
    vocab = Vocabulary(str(path))
    tokens = "[CLS] the river ##s team ##ing ##ly [SEP] ##ed king [SEP]".split()
    ids = [vocab.token_to_id[t] for t in tokens]
    positions, replacements = create_masked_lm_predictions(
        ids, 0.3, 20, vocab, random.Random(106), do_whole_word_mask=True
    )
    assert positions == [1, 2, 3]
    assert [vocab.id_to_token[i] for i in replacements] == ["the", "[MASK]", "[SEP]"]


@pytest.mark.parametrize("choose", [create_masked_lm_predictions, sample_masked_lm_predictions])
def test_both_modes_replace_80_10_10(tmp_path, choose):
    # original_release.md §5.4: of the chosen pieces, 80% become [MASK], 10% stay and 10% become
    # a random vocabulary word (which is the piece itself 1 time in len(vocab)).
    _write_vocab(tmp_path / "vocab.txt")
    vocab = Vocabulary(str(tmp_path / "vocab.txt"))
    rng = random.Random(7)
    ordinary = [i for i in vocab.word_ids if i not in (vocab.cls_id, vocab.sep_id, vocab.mask_id)]
    counts = collections.Counter()
    for _ in range(1500):
        ids = [vocab.cls_id, *(rng.choice(ordinary) for _ in range(126)), vocab.sep_id]
        positions, replacements = choose(ids, 0.15, 20, vocab, rng)
        for position, replacement in zip(positions, replacements, strict=True):
            kind = "mask" if replacement == vocab.mask_id else "other"
            counts["kept" if replacement == ids[position] else kind] += 1
    total = sum(counts.values())
    # min(20, round(128 * 0.15)) = 19 pieces a sequence; a share's standard deviation over
    # 28,500 pieces is at most 0.003.
    assert total == 1500 * 19
    assert counts["mask"] / total == pytest.approx(0.8, abs=0.01)
    assert counts["kept"] / total == pytest.approx(0.1 + 0.1 / len(vocab.word_ids), abs=0.01)
    assert counts["other"] / total == pytest.approx(0.1, abs=0.01)


def _features(paths):
    return [features for records in _records(paths) for _, features in records]


def _masked_labels(features):
    """{position: original piece id} of a record's masked predictions (weight 1)."""
    positions, labels, weights = (
        features[k][1] for k in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
    )
    return {p: label for p, label, w in zip(positions, labels, weights, strict=True) if w}


def _masked_words(features, vocab):
    """Yields (masked flags, was-[MASK] flags) of every word with a masked piece; a word is a
    piece and the "##" pieces after it, [CLS]/[SEP] skipped (original_release.md §5.4)."""
    ids = list(features["input_ids"][1])
    masked = _masked_labels(features)
    words = []
    for i in range(sum(features["input_mask"][1])):
        token = masked.get(i, ids[i])
        if token in (vocab.cls_id, vocab.sep_id):
            continue
        if words and vocab.is_subword[token]:
            words[-1].append(i)
        else:
            words.append([i])
    for word in words:
        if any(i in masked for i in word):
            yield (
                [i in masked for i in word],
                [ids[i] == vocab.mask_id for i in word if i in masked],
            )


@pytest.mark.parametrize("num_workers", [0, 2])
def test_whole_word_masking_properties(corpus, tmp_path, num_workers):
    outputs, _ = _run_ours(
        corpus, tmp_path, "dupe_3_prob_0.2", num_workers, do_whole_word_mask=True
    )
    vocab = Vocabulary(str(corpus / "vocab.txt"))
    counts = collections.Counter()
    for features in _features(outputs):
        num_masked = int(sum(features["masked_lm_weights"][1]))
        length = sum(features["input_mask"][1])
        num_to_predict = min(20, max(1, int(round(length * 0.2))))
        assert 1 <= num_masked <= num_to_predict
        counts["short"] += num_masked < num_to_predict
        for flags, was_mask in _masked_words(features, vocab):
            assert all(flags), "a word is masked only as a whole"
            counts["pieces"] += len(was_mask)
            counts["mask"] += sum(was_mask)
            counts["mixed"] += 0 < sum(was_mask) < len(was_mask)
    assert counts["short"] < 0.2 * len(_features(outputs))
    assert 0.77 < counts["mask"] / counts["pieces"] < 0.83
    # The 80/10/10 choice is per piece: some words come out partly [MASK].
    assert counts["mixed"] > 20


def _statistics(paths, input_bytes):
    features = _features(paths)
    lengths = np.array([sum(f["input_mask"][1]) for f in features])
    masked = np.array([sum(f["masked_lm_weights"][1]) for f in features])
    histogram, _ = np.histogram(lengths, bins=[0, 32, 64, 96, 124, 126, 129])
    return {
        "instances_per_mb": len(features) / (input_bytes / 1e6),
        "masked_share": masked.sum() / lengths.sum(),
        "is_next_share": np.mean([f["next_sentence_labels"][1][0] == 0 for f in features]),
        "length_histogram": histogram / len(features),
    }


def test_fast_mode_has_the_statistics_of_the_faithful_mode(corpus, tmp_path, monkeypatch, caplog):
    # Small shards, so that the corpus is cut into about ten.
    monkeypatch.setattr(fast_mode, "_SHARD_BYTES", 8 << 10)
    monkeypatch.setattr(fast_mode, "PROGRESS_SECONDS", 0.0)
    size = os.path.getsize(corpus / "all.txt")
    faithful, _ = _run_ours(corpus, tmp_path / "faithful", "defaults")
    caplog.set_level("INFO", logger="absl")
    fast, total = _run_ours(corpus, tmp_path / "fast", "defaults", num_workers=2)
    log = [r.getMessage() for r in caplog.records if r.name == "absl"]
    assert log.count("*** Example ***") == 20 and log[-1] == f"Wrote {total} total instances"
    assert any(line.startswith("Read ") and "MB/s, ETA" in line for line in log)
    expected, actual = _statistics(faithful, size), _statistics(fast, size)
    assert total > 3000
    assert actual["instances_per_mb"] == pytest.approx(expected["instances_per_mb"], rel=0.03)
    assert actual["masked_share"] == pytest.approx(expected["masked_share"], rel=0.02)
    assert actual["is_next_share"] == pytest.approx(expected["is_next_share"], abs=0.03)
    assert np.abs(actual["length_histogram"] - expected["length_histogram"]).sum() < 0.06
    # Not the same records: the fast mode draws differently.
    assert _records(fast)[0][0][0] != _records(faithful)[0][0][0]


def test_outputs_are_byte_reproducible(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(fast_mode, "_SHARD_BYTES", 8 << 10)
    runs = [
        _run_ours(corpus, tmp_path / "a", "dupe_1_seed_1")[0],
        _run_ours(corpus, tmp_path / "b", "dupe_1_seed_1")[0],
        _run_ours(corpus, tmp_path / "c", "dupe_1_seed_1", num_workers=1)[0],
        _run_ours(corpus, tmp_path / "d", "dupe_1_seed_1", num_workers=2)[0],
    ]
    contents = [[open(path, "rb").read() for path in paths] for paths in runs]
    assert contents[0] == contents[1]
    # The fast mode's output does not depend on the number of workers.
    assert contents[2] == contents[3]
    # Only the outputs: no temporary file is left beside them.
    for name, paths in zip("abcd", runs, strict=True):
        assert sorted(os.listdir(tmp_path / name)) == sorted(os.path.basename(p) for p in paths)


_BAD_INPUTS = {  # case -> (arguments, with {corpus} and {tmp} filled in; error message)
    "missing glob": (dict(input_file="{corpus}/nothing_*.txt"), "no file matches"),
    "empty corpus": (dict(input_file="{tmp}/empty.txt"), "hold no text"),
    "vocab without [MASK]": (dict(vocab_file="{tmp}/no_mask.txt"), "lacks [MASK]"),
    "max_predictions_per_seq -1": (dict(max_predictions_per_seq=-1), "at least 0"),
    "max_seq_length 4": (dict(max_seq_length=4), "at least 5"),
    "unwritable output": (
        dict(output_file="{tmp}/out/a.tfrecord,/nonexistent/dir/b.tfrecord"),
        "Cannot write output file '/nonexistent/dir/b.tfrecord'",
    ),
}


@pytest.mark.parametrize("num_workers", [0, 1])
@pytest.mark.parametrize("case", list(_BAD_INPUTS))
def test_bad_input_is_a_clear_error_without_output(case, num_workers, corpus, tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n\t\n\n", encoding="utf-8")
    (tmp_path / "no_mask.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n", encoding="utf-8")
    (tmp_path / "out").mkdir()
    arguments = {
        "input_file": str(corpus / "all.txt"),
        "output_file": f"{tmp_path}/out/a.tfrecord,{tmp_path}/out/b.tfrecord",
        "vocab_file": str(corpus / "vocab.txt"),
    }
    overrides, message = _BAD_INPUTS[case]
    options = {}
    for key, value in overrides.items():
        if key in arguments:
            arguments[key] = value.format(corpus=corpus, tmp=tmp_path)
        else:
            options[key] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        create_pretraining_data(
            **arguments,
            options=pretraining_options(dupe_factor=1, **options),
            num_workers=num_workers,
        )
    assert os.listdir(tmp_path / "out") == []


def test_runner_script_writes_the_library_output(corpus, tmp_path):
    output = tmp_path / "runner.tfrecord"
    command = [
        sys.executable, "create_pretraining_data.py", f"--input_file={corpus / 'part_*.txt'}",
        f"--output_file={output}", f"--vocab_file={corpus / 'vocab.txt'}", "--dupe_factor=1",
        "--max_seq_length=64", "--max_predictions_per_seq=10", "--random_seed=3",
    ]  # fmt: skip
    result = subprocess.run(
        command, cwd=REPO, env=oracle_env(), capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Wrote" in result.stderr and "total instances" in result.stderr
    options = pretraining_options(
        dupe_factor=1, max_seq_length=64, max_predictions_per_seq=10, random_seed=3
    )
    expected = tmp_path / "library.tfrecord"
    create_pretraining_data(
        str(corpus / "part_*.txt"), str(expected), str(corpus / "vocab.txt"), options
    )
    assert output.read_bytes() == expected.read_bytes()
