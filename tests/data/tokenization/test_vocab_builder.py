"""Tests for data/tokenization/vocab_builder.py, wordpiece_learner.py and build_vocab.py.

Oracles: Google's released vocab.txt (its first 999 lines are the reserved layout), the original
tokenizer from bert-tensorflow (`bert.tokenization`) that tokenizes the corpus with the learned
file, and the WordPiece learner shipped in tensorflow-text, which the learned vocabulary must
match or beat in tokens per corpus at the same size.
"""

import collections
import logging
import os
import random
import subprocess
import sys

import pytest
from absl import flags
from bert import tokenization as original
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib

from data.tokenization import full_tokenizer, vocab_builder, wordpiece_learner
from tests.helpers.minilm import minilm_vocab
from tests.helpers.paths import REPO

_STEMS = (
    "play work talk walk jump read teach learn open help call turn start show build count paint "
    "print move live love plan form test train point rain light sound water house garden market "
    "river station paper number letter winter summer teacher student village mountain history"
).split()
_PREFIXES = ("", "", "", "re", "un", "pre")
_SUFFIXES = ("", "", "s", "ed", "ing", "er", "ers", "able", "ment", "ly")
_FUNCTION_WORDS = "the of and to in a is was that it for on with as by at from his her they".split()
_NAMES = "Anna Boris Chen Dmitri Elena Farid Greta Hiro Ingrid Jamal".split()
# Accented Latin, CJK ideographs, Greek, Cyrillic, Hangul (NFD splits it into Jamo when
# uncased) and an emoji.
_FOREIGN = (
    "café naïve résumé Zürich São façade Ångström Øresund 北京 東京大学 中文 αβγ Ελλάδα Москва "
    "한국어 \U0001f642"
).split()
_RARE = ("ᚠᚢᚦ", "Ꙭ", "ⴰⵣ")  # Each appears once in the corpus.
_VOCAB_SIZE = 1600


def _make_corpus(num_lines=3000, seed=7):
    """English-like lines: Zipf-distributed stems with affixes, names, numbers, foreign words."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(_STEMS))]
    lines = []
    for _ in range(num_lines):
        words = []
        for _ in range(rng.randint(6, 18)):
            r = rng.random()
            if r < 0.4:
                words.append(rng.choice(_FUNCTION_WORDS))
            elif r < 0.9:
                stem = rng.choices(_STEMS, weights)[0]
                words.append(rng.choice(_PREFIXES) + stem + rng.choice(_SUFFIXES))
            elif r < 0.95:
                words.append(rng.choice(_NAMES))
            elif r < 0.98:
                words.append(rng.choice(_FOREIGN))
            else:
                words.append(str(rng.randint(0, 2000)))
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] += ","
        line = " ".join(words)
        lines.append(line[0].upper() + line[1:] + rng.choice(".!?"))
    for i, rare in enumerate(_RARE):
        lines[100 * (i + 1)] += " " + rare
    return lines


def _write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return str(path)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


@pytest.fixture(scope="module")
def oracle_flags():
    """bert-tensorflow reads FLAGS.preserve_unused_tokens (default False) on every call."""
    was_parsed = flags.FLAGS.is_parsed()
    if not was_parsed:
        flags.FLAGS.mark_as_parsed()
    yield
    if not was_parsed:
        flags.FLAGS.unparse_flags()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    lines = _make_corpus()
    return lines, _write(tmp_path_factory.mktemp("corpus") / "corpus.txt", lines)


@pytest.fixture(scope="module")
def uncased(corpus, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("uncased") / "vocab.txt")
    report = vocab_builder.build_vocab_file(corpus[1], path, _VOCAB_SIZE, progress_interval_s=1e9)
    return report, _read(path)


def _original_unk_count(vocab_file, lines, do_lower_case):
    """Tokenizes every line with the original FullTokenizer; returns ([UNK] count, tokens)."""
    tokenizer = original.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    tokens = [token for line in lines for token in tokenizer.tokenize(line)]
    return tokens.count("[UNK]"), len(tokens)


def _original_words(lines, do_lower_case):
    basic = original.BasicTokenizer(do_lower_case=do_lower_case)
    return collections.Counter(word for line in lines for word in basic.tokenize(line))


def test_google_layout(uncased):
    report, tokens = uncased
    google = _read(minilm_vocab())
    assert report.vocab_size == len(tokens) == _VOCAB_SIZE
    assert tokens[:999] == google[:999]
    ids = {token: tokens.index(token) for token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
    assert ids == {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
    assert tokens.index("[unused98]") == 99 and tokens.index("[unused993]") == 998
    assert len(set(tokens)) == len(tokens)
    # Characters from id 999 on, in code-point order, as in Google's files.
    chars = tokens[999 : 999 + report.num_chars]
    assert all(len(c) == 1 for c in chars) and chars == sorted(chars)
    assert len(tokens[999 + report.num_chars]) > 1
    assert report.num_pieces == _VOCAB_SIZE - 999 - 2 * report.num_chars


def test_vocab_covers_every_character_and_loads_in_original(uncased, corpus, oracle_flags):
    report, tokens = uncased
    lines, _ = corpus
    words = _original_words(lines, do_lower_case=True)
    chars = {c for word in words for c in word}
    assert set(tokens[999 : 999 + report.num_chars]) == chars
    assert {"##" + c for c in chars} <= set(tokens)
    # Uncased: no capitals or combining accents survive; Hangul is learned as Jamo.
    assert not any(c.isupper() for c in chars) and "é" not in chars and "\u1100" in chars
    vocab_file = report.output_file
    for tokenizer in (original.FullTokenizer(vocab_file), full_tokenizer.FullTokenizer(vocab_file)):
        ids = tokenizer.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        assert ids == [0, 100, 101, 102, 103]
    unk, total = _original_unk_count(vocab_file, lines, do_lower_case=True)
    print(f"[UNK] rate on the generated corpus: {unk}/{total}")
    assert unk == report.unk_tokens == 0
    assert total == report.total_tokens


def test_learned_pieces_come_from_the_original_words(uncased, corpus, oracle_flags):
    report, tokens = uncased
    words = _original_words(corpus[0], do_lower_case=True)
    prefixes = {w[:i] for w in words for i in range(1, len(w) + 1)}
    inner = {w[i:j] for w in words for i in range(1, len(w)) for j in range(i + 1, len(w) + 1)}
    learned = tokens[999 + report.num_chars :]
    for token in learned:
        if len(token) == 3 and token.startswith("##"):
            continue  # Every character is there as "##c", used or not.
        assert token[2:] in inner if token.startswith("##") else token in prefixes, token
    # The most frequent words are whole tokens; frequent inflections give pieces.
    assert {w for w, _ in words.most_common(40)} <= set(tokens)
    assert {"##ing", "##ed", "##s"} <= set(learned)


def test_selection_subtracts_only_kept_pieces():
    """The documented rule (tensorflow.org subwords tutorial; tensorflow/text#583): a kept piece's
    count comes off its prefixes; a piece below the threshold takes nothing off."""
    raw = {"a": 210, "ab": 210, "abc": 150, "abcx": 100, "##b": 210, "##bc": 150}
    # abcx (100) is kept: abc drops to 50, ab and a to 110. abc is not kept and subtracts
    # nothing, so ab (110) is kept and a drops to 0. ##bc (150) is kept: ##b drops to 60.
    assert wordpiece_learner._select(raw, 100) == {"abcx": 100, "ab": 110, "##bc": 150}


def test_beats_tensorflow_text_learner_at_same_size(corpus, tmp_path, oracle_flags):
    """tensorflow-text's learner gives at most `vocab_size` lines; ours at that exact size must
    not need more WordPiece tokens for the corpus, both counted by the original tokenizer."""
    lines, corpus_file = corpus
    counts, _ = vocab_builder.count_words([corpus_file])
    reserved = vocab_builder.VocabLayout().reserved_tokens()
    theirs = wordpiece_tokenizer_learner_lib.learn(
        dict(counts), _VOCAB_SIZE, reserved, lower_thresh=1
    )
    assert theirs[:999] == reserved
    their_path = tmp_path / "theirs.txt"
    their_path.write_text("".join(f"{token}\n" for token in theirs), encoding="utf-8")
    path = str(tmp_path / "vocab.txt")
    report = vocab_builder.build_vocab_file(corpus_file, path, len(theirs))
    assert report.vocab_size == len(theirs)
    our_unk, our_total = _original_unk_count(path, lines, True)
    their_unk, their_total = _original_unk_count(str(their_path), lines, True)
    print(f"tokens for the corpus: ours {our_total}, tensorflow-text {their_total}")
    # Our own report counts what the original tokenizer counts.
    assert (report.total_tokens, report.unk_tokens) == (our_total, our_unk)
    assert their_unk == our_unk == 0
    assert our_total <= their_total


def test_cased(corpus, tmp_path, oracle_flags):
    lines, corpus_file = corpus
    path = str(tmp_path / "vocab.txt")
    report = vocab_builder.build_vocab_file(corpus_file, path, 1800, do_lower_case=False)
    tokens = _read(path)
    assert len(tokens) == 1800
    assert {"é", "##é", "Z", "##Z", "한", "Anna", "The"} <= set(tokens)
    assert _original_unk_count(path, lines, do_lower_case=False) == (0, report.total_tokens)


def test_custom_layout(corpus, tmp_path, oracle_flags):
    lines, corpus_file = corpus
    layout = vocab_builder.VocabLayout(
        pad_id=0, cls_id=1, sep_id=2, unk_id=3, mask_id=5, num_unused=2
    )
    path = str(tmp_path / "vocab.txt")
    vocab_builder.build_vocab_file(corpus_file, path, 400, layout=layout)
    tokens = _read(path)
    assert len(tokens) == 400
    assert tokens[:7] == ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[unused0]", "[MASK]", "[unused1]"]
    tokenizer = original.FullTokenizer(path)
    assert tokenizer.convert_tokens_to_ids(["[UNK]", "[MASK]"]) == [3, 5]
    assert tokenizer.tokenize("ᚠᚢᚦ the") == ["ᚠ", "##ᚢ", "##ᚦ", "the"]


def test_exhausted_corpus_gives_fewer_lines(tmp_path, oracle_flags):
    corpus_file = _write(tmp_path / "tiny.txt", ["The cat sat on the mat.", "A cat, a hat."])
    path = str(tmp_path / "vocab.txt")
    report = vocab_builder.build_vocab_file(corpus_file, path, 5000)
    tokens = _read(path)
    assert report.vocab_size == len(tokens) < 5000
    assert report.threshold == 1
    # With every piece kept, each word is one token.
    tokenizer = original.FullTokenizer(path)
    assert tokenizer.tokenize("The cat sat on the mat.") == "the cat sat on the mat .".split()


def test_min_count_and_limits(corpus, tmp_path, oracle_flags):
    lines, corpus_file = corpus
    path = str(tmp_path / "vocab.txt")
    report = vocab_builder.build_vocab_file(corpus_file, path, _VOCAB_SIZE, min_count=2)
    assert not {"ᚠ", "Ꙭ", "ⵣ"} & set(_read(path))
    unk, total = _original_unk_count(path, lines, do_lower_case=True)
    print(f"[UNK] rate with min_count=2: {unk}/{total}")
    assert unk == report.unk_tokens == len(_RARE) and total == report.total_tokens
    assert report.unk_rate < 1e-4
    report = vocab_builder.build_vocab_file(corpus_file, path, _VOCAB_SIZE, max_input_lines=50)
    assert report.lines == 50
    report = vocab_builder.build_vocab_file(corpus_file, path, 1300, max_chars=10)
    assert report.num_chars == 10 and report.unk_tokens > 0


def test_deterministic_and_logs_progress(corpus, uncased, tmp_path, caplog):
    path = str(tmp_path / "vocab.txt")
    with caplog.at_level(logging.INFO, logger="absl"):
        vocab_builder.build_vocab_file(corpus[1], path, _VOCAB_SIZE, progress_interval_s=0)
    assert _read(path) == uncased[1]
    assert any("lines/s" in m and "MB/s" in m for m in caplog.messages)
    assert any("[UNK] rate on the corpus: 0.0000%" in m for m in caplog.messages)
    assert os.listdir(tmp_path) == ["vocab.txt"]


@pytest.mark.parametrize(
    "case, message",
    [
        ("no_match", "no file matches"),
        ("empty_file", "holds no text"),
        ("blank_file", "holds no text"),
        ("input_dir", "is a directory; pass a glob"),
        ("no_room", "leaves no room after the 999 reserved"),
        ("too_small", "need 1145 lines"),
        ("missing_dir", "Cannot write the output file"),
        ("output_dir", "is a directory; pass a file name"),
        ("min_count", "min_count must be at least 1"),
        ("rare_chars", "No character occurs min_count=1000000 times"),
    ],
)
def test_bad_input(case, message, corpus, tmp_path):
    corpus_file = corpus[1]
    out = tmp_path / "vocab.txt"
    out.write_text("previous\n")
    kwargs = {"input_file": corpus_file, "output_file": str(out), "vocab_size": 1144}
    if case == "no_match":
        kwargs["input_file"] = f"{corpus_file},{tmp_path}/nothing*.txt"
    elif case in ("empty_file", "blank_file"):
        kwargs["input_file"] = _write(tmp_path / "empty.txt", [] if case == "empty_file" else [" "])
    elif case == "input_dir":
        kwargs["input_file"] = str(tmp_path)
    elif case == "no_room":
        kwargs["vocab_size"] = 999
    elif case == "missing_dir":
        kwargs["output_file"] = str(tmp_path / "missing" / "vocab.txt")
    elif case == "output_dir":
        kwargs["output_file"] = str(tmp_path)
    elif case in ("min_count", "rare_chars"):
        kwargs["min_count"] = 0 if case == "min_count" else 1000000
    with pytest.raises(ValueError, match=message):
        vocab_builder.build_vocab_file(**kwargs)
    # Nothing half-written: the previous file is intact and no temporary file is left.
    assert out.read_text() == "previous\n"
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"unk_id": 0}, "must be distinct"),
        ({"mask_id": 999}, "lies outside the 999 reserved lines"),
        ({"num_unused": -1}, "num_unused must be >= 0"),
    ],
)
def test_bad_layout(kwargs, message):
    with pytest.raises(ValueError, match=message):
        vocab_builder.VocabLayout(**kwargs)


def _run_runner(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run(
        [sys.executable, os.path.join(REPO, "build_vocab.py"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_runner_end_to_end(corpus, tmp_path, oracle_flags):
    path = tmp_path / "vocab.txt"
    result = _run_runner(
        f"--input_file={corpus[1]}",
        f"--output_file={path}",
        "--vocab_size=500",
        "--special_token_ids=0,3,1,2,4",
        "--num_unused=3",
        "--do_lower_case=false",
    )
    assert result.returncode == 0, result.stderr
    tokens = _read(path)
    assert len(tokens) == 500
    assert tokens[:8] == ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"] + [
        f"[unused{i}]" for i in range(3)
    ]
    assert "Ø" in tokens  # Cased.
    unk, total = _original_unk_count(str(path), corpus[0], do_lower_case=False)
    assert unk == 0
    assert f"[UNK] rate on the corpus: 0.0000% (0 of {total} WordPiece tokens)" in result.stderr
