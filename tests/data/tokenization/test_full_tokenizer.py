"""Tests for data/tokenization/full_tokenizer.py and text_normalization.py.

The oracle is the original implementation as shipped in bert-tensorflow
(`bert.tokenization`). Its one intended difference: bert-tensorflow's
`load_vocab` skips a duplicated line (ids are `len(vocab)`, so every later
token shifts down), whereas the final google-research/bert release, which this
module reproduces, lets the duplicate overwrite the index and keeps counting
lines. Real vocabularies have no duplicates, so the two agree on them.
"""

import os
import random

import pytest
from bert import tokenization as original

from data.tokenization import full_tokenizer, text_normalization
from tests.helpers.minilm import minilm_vocab

_TEST_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing"]
_CORPUS_SEED = 20181031
_CORPUS_LINES = 20000


def _write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(line + "\n" for line in lines))
    return str(path)


@pytest.fixture(scope="module")
def google_vocab_file():
    path = minilm_vocab()
    assert os.path.getsize(path) > 200_000
    return path


# ----------------------------------------------------------------------------
# The original tokenization_test.py cases.


def test_full_tokenizer(tmp_path):
    vocab_file = _write_lines(tmp_path / "vocab.txt", _TEST_VOCAB + [","])
    tokenizer = full_tokenizer.FullTokenizer(vocab_file)
    tokens = tokenizer.tokenize("UNwant\u00e9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]


def test_chinese():
    tokenizer = full_tokenizer.BasicTokenizer()
    assert tokenizer.tokenize("ah\u535a\u63a8zz") == ["ah", "\u535a", "\u63a8", "zz"]


def test_basic_tokenizer_lower():
    tokenizer = full_tokenizer.BasicTokenizer(do_lower_case=True)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == "hello ! how are you ?".split()
    assert tokenizer.tokenize("H\u00e9llo") == ["hello"]


def test_basic_tokenizer_no_lower():
    tokenizer = full_tokenizer.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == "HeLLo ! how Are yoU ?".split()


def test_wordpiece_tokenizer():
    vocab = {token: i for i, token in enumerate(_TEST_VOCAB)}
    tokenizer = full_tokenizer.WordpieceTokenizer(vocab=vocab)
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_convert_tokens_to_ids():
    vocab = {token: i for i, token in enumerate(_TEST_VOCAB)}
    tokens = ["un", "##want", "##ed", "runn", "##ing"]
    assert full_tokenizer.convert_tokens_to_ids(vocab, tokens) == [7, 4, 5, 8, 9]


def test_is_whitespace():
    for char in (" ", "\t", "\r", "\n", "\u00a0"):
        assert text_normalization._is_whitespace(char), repr(char)
    for char in ("A", "-"):
        assert not text_normalization._is_whitespace(char), repr(char)


def test_is_control():
    assert text_normalization._is_control("\u0005")
    for char in ("A", " ", "\t", "\r", "\U0001f4a9"):
        assert not text_normalization._is_control(char), repr(char)


def test_is_punctuation():
    for char in ("-", "$", "`", "."):
        assert text_normalization._is_punctuation(char), repr(char)
    for char in ("A", " "):
        assert not text_normalization._is_punctuation(char), repr(char)


# ----------------------------------------------------------------------------
# Generated multilingual corpus, compared token for token with the original.


def _chars(*ranges):
    return [chr(cp) for low, high in ranges for cp in range(low, high + 1)]


_SCRIPTS = {
    "latin": list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    + list("éèêëàâäôöûüçñÉÀÖÜßẞøåæœİıſǅǆŁłŒĲÅÞ")
    + ["\u212b", "\u212a", "\ufb01", "e\u0301", "a\u0308", "n\u0303", "\u0301"],
    "greek": _chars((0x391, 0x3A9), (0x3B1, 0x3C9)) + list("άέήίόύώΐΰϊϋ"),
    "cyrillic": _chars((0x410, 0x44F)) + list("ёЁйЙїЇ"),
    "cjk": _chars((0x4E00, 0x4E40), (0x9FE0, 0x9FFF), (0x3400, 0x3420), (0xF900, 0xF920))
    + _chars((0x20000, 0x20020), (0x2A6D0, 0x2A6E5), (0x2A700, 0x2A705), (0x2B73A, 0x2B745))
    + _chars((0x2B81A, 0x2B825), (0x2CEA5, 0x2CEB5), (0x2F800, 0x2F805), (0x2FA1A, 0x2FA25))
    + _chars((0x4DB8, 0x4DC5), (0x30000, 0x30005), (0x3000, 0x3003))
    + list("「」『』、。"),
    "hangul": _chars((0xAC00, 0xAC40), (0xD790, 0xD7A3), (0x1100, 0x1112)),
    "kana": _chars((0x3041, 0x3096), (0x30A1, 0x30FA), (0xFF66, 0xFF9D)) + ["ー"],
    "arabic": _chars((0x621, 0x64A), (0x64B, 0x652), (0x660, 0x669)) + list("،؟"),
    "devanagari": _chars((0x905, 0x939), (0x93E, 0x94D), (0x966, 0x96F)) + ["।"],
    "thai": _chars((0xE01, 0xE2E), (0xE31, 0xE3A), (0xE47, 0xE4E)),
    "emoji": _chars((0x1F600, 0x1F64F), (0x1F300, 0x1F320), (0x1F1E6, 0x1F1FF))
    + ["\u200d", "\ufe0f", "\U0001f3fd", "\u2764", "\U0001f469\u200d\U0001f4bb"],
    "fullwidth": _chars((0xFF01, 0xFF5E)),
    "symbols": list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~…—–«»¿¡€£¥©®™°±§¶•‘’“”†‡∑∞≈≠℃№½²Ⅻ")
    + ["\U0001d400", "\u2e3a"],
}
_CONTROL_AND_FORMAT = (
    ["\u00ad", "\u200b", "\ufeff", "\ufffd", "\x00", "\x0b", "\x0c", "\x85", "\u2028"]
    + ["\u2029", "\x1f", "\x7f", "\x05", "\u200e", "\u202e", "\u061c", "\U000e0001", "\u2060"]
    + ["\t", "\n", "\r", "\r\n", "\ud800", "\ue000", "\U0010fffd", "\u0378"]
)
_SPACES = [" ", "\u00a0", "\u1680", "\u202f", "\u205f", "\u3000"] + _chars((0x2000, 0x200A))
_LITERALS = (
    ["[MASK]", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[unused1]", "##ing", "##", "[mask]"]
    + ["3.14", "1,000,000", "2019-03-28", "-42", "0x1F", "１２３", "٣٫١٤", "1e-12"]
    + ["https://example.com/a/b?q=1&r=2#frag", "www.ExAmple.co.uk", "user+tag@mail.org"]
    + ["İstanbul", "ΣΑΣ", "ΌΣΟΣ", "Straße", "STRASSE", "ǅemal", "Ångström", "K\u212aelvin"]
    + ["John Johanson's,", "don't", "U.S.A.", "C++", "e.g.", "naïve café", "coöperate"]
)


def _random_word(rng, wordpieces):
    kind = rng.random()
    if kind < 0.3:
        # Words built from real vocabulary pieces exercise the greedy matching.
        word = "".join(rng.choice(wordpieces).removeprefix("##") for _ in range(rng.randint(1, 3)))
        return rng.choice((word, word.upper(), word.title()))
    if kind < 0.75:
        alphabet = _SCRIPTS[rng.choice(sorted(_SCRIPTS))]
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10)))
    if kind < 0.85:
        return rng.choice(_LITERALS)
    if kind < 0.93:
        return "".join(rng.choice(_CONTROL_AND_FORMAT) for _ in range(rng.randint(1, 3)))
    if kind < 0.97:
        return str(rng.randint(0, 10 ** rng.randint(1, 12)))
    if kind < 0.985:
        # Around the 200-character limit, also after lower-casing/NFD.
        alphabet = rng.choice((list("abcdefxyz"), list("éàöİ"), _SCRIPTS["hangul"]))
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(190, 260)))
    return chr(rng.randrange(0x110000))


def _generate_corpus(wordpieces):
    """Returns `_CORPUS_LINES` lines of mixed-script text, the same on every run."""
    rng = random.Random(_CORPUS_SEED)
    separators = _SPACES + ["", "", " ", " ", " ", "\t", "\n", "-", ",", "\u00ad", "\u200b"]
    lines = []
    for _ in range(_CORPUS_LINES):
        parts = []
        for _ in range(rng.randint(1, 14)):
            parts.append(_random_word(rng, wordpieces))
            parts.append(rng.choice(separators))
        lines.append("".join(parts))
    return lines


@pytest.fixture(scope="module")
def corpus(google_vocab_file):
    vocab = full_tokenizer.load_vocab(google_vocab_file)
    wordpieces = [t for t in vocab if not t.startswith("[") and len(t) > 1]
    lines = _generate_corpus(wordpieces)
    # Make sure the generator really produces the hard cases.
    text = "".join(lines)
    for needle in ("\U00020000", "\x00", "\u00ad", "\ufeff", "\u2028", "\x85", "[MASK]"):
        assert needle in text, repr(needle)
    assert any(len(word) > 200 for line in lines for word in line.split())
    return lines


def _first_mismatch(lines, expected, actual):
    for line, want, got in zip(lines, expected, actual, strict=True):
        if want != got:
            return f"input {line!r}:\n original {want}\n ours     {got}"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_matches_original_on_generated_corpus(
    oracle_flags, google_vocab_file, corpus, do_lower_case
):
    theirs = original.FullTokenizer(google_vocab_file, do_lower_case=do_lower_case)
    ours = full_tokenizer.FullTokenizer(google_vocab_file, do_lower_case=do_lower_case)
    assert ours.vocab == theirs.vocab
    assert list(ours.vocab) == list(theirs.vocab)
    assert ours.inv_vocab == theirs.inv_vocab

    want_basic = [theirs.basic_tokenizer.tokenize(line) for line in corpus]
    got_basic = [ours.basic_tokenizer.tokenize(line) for line in corpus]
    assert _first_mismatch(corpus, want_basic, got_basic) is None

    want = [theirs.tokenize(line) for line in corpus]
    got = [ours.tokenize(line) for line in corpus]
    assert _first_mismatch(corpus, want, got) is None
    # The corpus must reach both outcomes of WordPiece in bulk.
    flat = [token for tokens in got for token in tokens]
    assert flat.count("[UNK]") > 1000
    assert sum(token.startswith("##") for token in flat) > 1000

    ids = [ours.convert_tokens_to_ids(tokens) for tokens in got[:500]]
    assert ids == [theirs.convert_tokens_to_ids(tokens) for tokens in want[:500]]
    assert [ours.convert_ids_to_tokens(i) for i in ids] == want[:500]


def _code_point_sample():
    """All of planes 0-2 (every script and CJK block), a stride through the rest."""
    code_points = list(range(0x30000)) + list(range(0x30000, 0x110000, 61))
    return [chr(cp) for cp in code_points] + ["\U000e0001", "\U000e0020", "\U000e0100"]


@pytest.mark.parametrize("name", ["_is_whitespace", "_is_control", "_is_punctuation"])
def test_character_classes_match_original_on_every_code_point(name):
    ours, theirs = getattr(text_normalization, name), getattr(original, name)
    chars = [chr(cp) for cp in range(0x110000)]
    assert [c for c in chars if ours(c)] == [c for c in chars if theirs(c)]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_basic_tokenizer_matches_original_char_by_char(oracle_flags, do_lower_case):
    # Each code point alone as a word, so that one character's treatment can
    # not hide behind its neighbours.
    text = " ".join(_code_point_sample())
    theirs = original.BasicTokenizer(do_lower_case=do_lower_case)
    ours = full_tokenizer.BasicTokenizer(do_lower_case=do_lower_case)
    assert ours.tokenize(text) == theirs.tokenize(text)
    glued = "".join(_code_point_sample())
    assert ours.tokenize(glued) == theirs.tokenize(glued)


def test_basic_tokenizer_steps_match_original(corpus):
    theirs = original.BasicTokenizer()
    ours = full_tokenizer.BasicTokenizer()
    text = "\n".join(corpus[:3000])
    assert ours._clean_text(text) == theirs._clean_text(text)
    assert ours._tokenize_chinese_chars(text) == theirs._tokenize_chinese_chars(text)
    for word in text.split()[:20000]:
        assert ours._run_strip_accents(word) == theirs._run_strip_accents(word)
        assert ours._run_split_on_punc(word) == theirs._run_split_on_punc(word)
    for cp in (0x3400, 0x4DBF, 0x4DC0, 0x9FFF, 0xA000, 0x2A6DF, 0x2A6E0, 0x2CEAF, 0x2CEB0):
        assert text_normalization._is_chinese_char(cp) == theirs._is_chinese_char(cp), hex(cp)


def test_documented_quirks():
    lower = full_tokenizer.BasicTokenizer(do_lower_case=True)
    cased = full_tokenizer.BasicTokenizer(do_lower_case=False)
    # No protected special tokens in raw text.
    assert lower.tokenize("[MASK]") == ["[", "mask", "]"]
    assert cased.tokenize("[MASK]") == ["[", "MASK", "]"]
    # Soft hyphen, zero-width space and BOM join their neighbours.
    assert cased.tokenize("ab\u00adc\u200bd\ufeffe") == ["abcde"]
    # NBSP is a space; U+2028 survives cleaning but still splits words.
    assert cased.tokenize("a\u00a0b\u2028c") == ["a", "b", "c"]
    # NFD in uncased mode decomposes Hangul syllables into 8 conjoining jamo.
    assert len(lower.tokenize("\ud55c\uad6d\uc5b4")[0]) == 8
    assert cased.tokenize("\ud55c\uad6d\uc5b4") == ["\ud55c\uad6d\uc5b4"]
    # No NFKC: full-width letters stay full-width; non-ASCII symbols are not punctuation.
    assert lower.tokenize("\uff26\uff4f\uff4f \u20ac5") == ["\uff46\uff4f\uff4f", "\u20ac5"]


def test_long_words_become_unk():
    vocab = {"[UNK]": 0, "a": 1, "##a": 2}
    tokenizer = full_tokenizer.WordpieceTokenizer(vocab)
    assert tokenizer.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert tokenizer.tokenize("a" * 201 + " a") == ["[UNK]", "a"]
    short = full_tokenizer.WordpieceTokenizer(vocab, unk_token="<?>", max_input_chars_per_word=3)
    assert short.tokenize("aaaa aaa") == ["<?>", "a", "##a", "##a"]


# ----------------------------------------------------------------------------
# validate_case_matches_checkpoint


def _validation_outcome(module, do_lower_case, init_checkpoint):
    try:
        module.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    except ValueError as err:
        return str(err)
    return None


def test_validate_case_rejects_lowercased_model_when_cased():
    with pytest.raises(ValueError) as info:
        full_tokenizer.validate_case_matches_checkpoint(
            False, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt"
        )
    assert str(info.value) == (
        "You passed in `--do_lower_case=False` with "
        "`--init_checkpoint=/models/uncased_L-12_H-768_A-12/bert_model.ckpt`. However, "
        "`uncased_L-12_H-768_A-12` seems to be a lowercased model, so you should pass in "
        "`--do_lower_case=True` so that the fine-tuning matches how the model was "
        "pre-training. If this error is wrong, please just comment out this check."
    )


@pytest.mark.parametrize(
    "init_checkpoint",
    [
        None,
        "",
        "uncased_L-12_H-768_A-12/bert_model.ckpt",
        "gs://b/uncased_L-24_H-1024_A-16/bert_model.ckpt",
        "/m/multilingual_L-12_H-768_A-12/bert_model.ckpt.index",
        "/m/chinese_L-12_H-768_A-12/bert_model.ckpt-123",
        "/m/cased_L-12_H-768_A-12/bert_model.ckpt",
        "/m/cased_L-24_H-1024_A-16/bert_model.ckpt-123",
        "/m/multi_cased_L-12_H-768_A-12/bert_model.ckpt",
        "/m/multi_cased_L-12_H-768_A-12/bert_modelXckpt",
        "/m/wwm_uncased_L-24_H-1024_A-16/bert_model.ckpt",
        "/m/uncased_L-4_H-256_A-4/bert_model.ckpt",
        "/m/my_model/bert_model.ckpt",
        "/m/uncased_L-12_H-768_A-12/model.ckpt-1000",
        "/m/uncased_L-12_H-768_A-12.ckpt",
        "/m/x/uncased_L-12_H-768_A-12/sub/bert_model.ckpt",
    ],
)
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_validate_case_matches_original(do_lower_case, init_checkpoint):
    expected = _validation_outcome(original, do_lower_case, init_checkpoint)
    assert _validation_outcome(full_tokenizer, do_lower_case, init_checkpoint) == expected


def test_validate_case_cases():
    ckpt = "/m/cased_L-12_H-768_A-12/bert_model.ckpt-123"
    assert "`--do_lower_case=False`" in _validation_outcome(full_tokenizer, True, ckpt)
    assert _validation_outcome(full_tokenizer, False, ckpt) is None
    for unknown in ("/m/wwm_cased_L-24_H-1024_A-16/bert_model.ckpt", "/m/bert_model.ckpt"):
        assert _validation_outcome(full_tokenizer, True, unknown) is None
        assert _validation_outcome(full_tokenizer, False, unknown) is None


# ----------------------------------------------------------------------------
# load_vocab and the conversion helpers


def test_duplicate_vocab_line_overwrites_index(tmp_path):
    vocab_file = _write_lines(tmp_path / "vocab.txt", ["[UNK]", "a", "b", "a", "c"])
    vocab = full_tokenizer.load_vocab(vocab_file)
    assert list(vocab.items()) == [("[UNK]", 0), ("a", 3), ("b", 2), ("c", 4)]
    tokenizer = full_tokenizer.FullTokenizer(vocab_file)
    assert tokenizer.inv_vocab == {0: "[UNK]", 3: "a", 2: "b", 4: "c"}
    assert tokenizer.convert_tokens_to_ids(tokenizer.tokenize("A c")) == [3, 4]
    # bert-tensorflow differs here: it keeps the first occurrence and numbers
    # tokens by dict size, which shifts every later id.
    assert original.load_vocab(vocab_file) == {"[UNK]": 0, "a": 1, "b": 2, "c": 3}


def test_load_vocab_line_handling_matches_original(tmp_path):
    path = tmp_path / "vocab.txt"
    # CRLF, a lone CR inside a line (GFile drops it), a blank line, surrounding
    # whitespace, NEL and U+2028 inside a line, no newline at the end of the file.
    path.write_bytes(
        b"[PAD]\r\n  [UNK]  \n\n\t##a\tb\nx\ry\nq\xc2\x85r\nu\xe2\x80\xa8v\n \xc2\xa0z\nlast"
    )
    vocab = full_tokenizer.load_vocab(str(path))
    assert list(vocab.items()) == list(original.load_vocab(str(path)).items())
    assert vocab["[UNK]"] == 1 and vocab["xy"] == 4 and vocab["last"] == 8


def test_load_vocab_errors(tmp_path):
    missing = str(tmp_path / "nope" / "vocab.txt")
    with pytest.raises(ValueError, match="nope/vocab.txt.*does not exist"):
        full_tokenizer.load_vocab(missing)
    with pytest.raises(ValueError, match="is a directory"):
        full_tokenizer.FullTokenizer(str(tmp_path))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert full_tokenizer.load_vocab(str(empty)) == original.load_vocab(str(empty)) == {}
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\nfine\nbro\xffken\n")
    with pytest.raises(ValueError, match="line 3, is not valid UTF-8"):
        full_tokenizer.load_vocab(str(bad))


def test_convert_helpers():
    vocab = {"a": 0, "b": 1}
    assert full_tokenizer.convert_by_vocab(vocab, ["b", "a", "b"]) == [1, 0, 1]
    assert full_tokenizer.convert_ids_to_tokens({0: "a", 1: "b"}, [1, 0]) == ["b", "a"]
    with pytest.raises(KeyError):
        full_tokenizer.convert_tokens_to_ids(vocab, ["a", "[UNK]"])
    for text in ("", "  \t\n", " a  b\u3000c\u2028d\x85e ", "x"):
        assert full_tokenizer.whitespace_tokenize(text) == original.whitespace_tokenize(text)


# ----------------------------------------------------------------------------
# bytes input


def test_bytes_input_with_invalid_utf8_is_decoded_ignoring_errors(oracle_flags, tmp_path):
    raw = b"Caf\xc3\xa9 \xff\xfeun\xc3want\xe2\x82 running \xed\xa0\x80ok"
    assert full_tokenizer.convert_to_unicode(raw) == "Café unwant running ok"
    assert full_tokenizer.printable_text(raw) == "Café unwant running ok"
    assert full_tokenizer.convert_to_unicode("é") == "é"
    for bad in (None, 3, bytearray(b"a")):
        with pytest.raises(ValueError, match="Unsupported string type"):
            full_tokenizer.convert_to_unicode(bad)
        with pytest.raises(ValueError, match="Unsupported string type"):
            full_tokenizer.printable_text(bad)

    vocab_file = _write_lines(tmp_path / "vocab.txt", _TEST_VOCAB)
    ours = full_tokenizer.FullTokenizer(vocab_file)
    assert ours.tokenize(raw) == ["[UNK]", "un", "##want", "runn", "##ing", "[UNK]"]
    assert ours.tokenize(raw) == original.FullTokenizer(vocab_file).tokenize(raw)
    assert ours.basic_tokenizer.tokenize(raw) == ours.basic_tokenizer.tokenize(
        raw.decode("utf-8", "ignore")
    )
    pieces = ours.wordpiece_tokenizer.tokenize(b"unwanted \xffrunning")
    assert pieces == "un ##want ##ed runn ##ing".split()
