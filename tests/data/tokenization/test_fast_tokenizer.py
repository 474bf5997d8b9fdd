"""Tests for data/tokenization/fast_tokenizer.py and preprocessor.py.

Oracles: the original `bert.tokenization.FullTokenizer`, and the original
`convert_single_example` / `_truncate_seq_pair` read from bert-tensorflow's
run_classifier.py (its functions are compiled from the source file rather than
imported, because importing the module defines absl flags that clash with the
other original scripts).
"""

import ast
import os
import subprocess
import sys
import unicodedata

import bert
import keras
import numpy as np
import pytest
import tensorflow as tf
from bert import tokenization as original

from data.tokenization import fast_tokenizer, full_tokenizer, packing
from data.tokenization import preprocessor as preprocessing
from tests.data.tokenization.test_full_tokenizer import _code_point_sample, _generate_corpus
from tests.helpers.minilm import minilm_vocab


@pytest.fixture(scope="module")
def vocab_file():
    return minilm_vocab()


@pytest.fixture(scope="module")
def corpus_bytes(vocab_file):
    vocab = full_tokenizer.load_vocab(vocab_file)
    lines = _generate_corpus([t for t in vocab if not t.startswith("[") and len(t) > 1])
    # The corpus holds lone surrogates, which have no UTF-8 form: as bytes they
    # are invalid UTF-8 and both tokenizers must drop them.
    data = [line.encode("utf-8", "surrogatepass") for line in lines]
    assert sum(b"\xed\xa0\x80" in line for line in data) > 10
    return data


_FAST = {}


def _fast(vocab_file, do_lower_case):
    key = (vocab_file, do_lower_case)
    if key not in _FAST:
        _FAST[key] = fast_tokenizer.FastFullTokenizer(vocab_file, do_lower_case=do_lower_case)
    return _FAST[key]


def _original_ids(tokenizer, texts):
    return [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in texts]


def _first_mismatch(texts, want, got):
    for text, w, g in zip(texts, want, got, strict=True):
        if w != g:
            return f"input {text[:300]!r}:\n original {w[:50]}\n fast     {g[:50]}"
    return None


def _write_vocab(path, tokens):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(token + "\n" for token in tokens))
    return str(path)


# ----------------------------------------------------------------------------
# Identity with the original tokenizer


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_ids_match_original_on_generated_corpus(
    oracle_flags, vocab_file, corpus_bytes, do_lower_case
):
    texts = corpus_bytes[:10000]  # half: the original tokenizer is the slow part
    want = _original_ids(original.FullTokenizer(vocab_file, do_lower_case), texts)
    got = _fast(vocab_file, do_lower_case).tokenize(tf.constant(texts)).to_list()
    assert _first_mismatch(texts, want, got) is None
    flat = [i for ids in got for i in ids]
    assert flat.count(100) > 1000 and len(set(flat)) > 5000  # [UNK] is 100


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_ids_match_original_code_point_by_code_point(oracle_flags, vocab_file, do_lower_case):
    sample = _code_point_sample()
    texts = [" ".join(sample), "".join(sample)]
    texts = [t.encode("utf-8", "surrogatepass") for t in texts]
    want = _original_ids(original.FullTokenizer(vocab_file, do_lower_case), texts)
    got = _fast(vocab_file, do_lower_case).tokenize(tf.constant(texts)).to_list()
    assert _first_mismatch(texts, want, got) is None


def _context_texts():
    """Texts where lower-casing depends on context or NFD reorders marks."""
    chars = [
        chr(cp)
        for cp in range(0x20000)
        if unicodedata.category(chr(cp)) not in ("Cn", "Co", "Cs", "Lo")
    ]
    chars += ["\u00aa", "\u00ba"]  # the cased Lo letters
    # Every character before, after and around a capital sigma.
    sigma = " ".join(f"{c}Σ A{c}Σ AΣ{c} AΣ{c}b" for c in chars)
    # Spacing marks with a non-zero combining class, which canonical ordering
    # moves, among other marks and after every kind of starter.
    marks = ["\U0001d16d", "\U0001d165", "\u302e", "\U00016ff0", "\u1715", "\u0301", "\u0316"]
    reordered = [f"{a}{b}{c}" for a in marks for b in marks for c in marks + ["Σ", "x", ""]]
    return [sigma, " ".join("a" + r for r in reordered), " ".join("Σ" + r for r in reordered)]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_basic_tokens_match_original_exactly(oracle_flags, tmp_path, corpus_bytes, do_lower_case):
    # With every basic token of the oracle as a whole vocabulary entry, equal
    # ids mean equal basic tokenization; the real vocabulary hides most
    # differences behind [UNK].
    texts = [t.encode() for t in _context_texts()] + corpus_bytes[:1000]
    basic = original.BasicTokenizer(do_lower_case=do_lower_case)
    tokens = {token for text in texts for token in basic.tokenize(text)}
    # FastWordpieceTokenizer cannot hold tokens over 256 bytes; they stay [UNK].
    tokens = sorted(t for t in tokens if len(t.encode()) <= 256)
    if do_lower_case:
        # The hard cases are really there: final sigmas, and reordered marks.
        assert "aς" in tokens and "a\U0001d165\U0001d16dσ" in tokens
    vocab_path = _write_vocab(tmp_path / "vocab.txt", ["[UNK]"] + tokens)
    want = _original_ids(original.FullTokenizer(vocab_path, do_lower_case), texts)
    fast = fast_tokenizer.FastFullTokenizer(vocab_path, do_lower_case=do_lower_case)
    got = fast.tokenize(tf.constant(texts)).to_list()
    assert _first_mismatch(texts, want, got) is None


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_edge_cases_match_original(oracle_flags, vocab_file, do_lower_case):
    texts = [
        "",
        " \t\n\u3000\u2028",
        "ΣΑΣ ΌΣΟΣ ὈΔΥΣΣΕΎΣ A.Σ AΣ\u0301 Σ'x",
        "İstanbul ǅemal ﬁ Ⅻ Ⓐ",
        "İ" * 200 + " " + "İ" * 201,  # 200/201 characters after lower-casing and NFD
        "e\u0301" * 150,  # 300 characters, 150 after accent stripping
        "x" * 200 + " " + "x" * 201 + " " + "\U0001f600" * 201,
        "[MASK] [UNK] [CLS] ##ing",
        "unwant\u00e9d,running 博推zz 한국어",
    ]
    texts = [t.encode() for t in texts]
    texts.append(b"Caf\xc3\xa9 \xff\xfeun\xc3want\xe2\x82 running \xed\xa0\x80ok \xf4\x90\x80\x80")
    want = _original_ids(original.FullTokenizer(vocab_file, do_lower_case), texts)
    fast = _fast(vocab_file, do_lower_case)
    assert fast.tokenize(tf.constant(texts)).to_list() == want
    assert fast.tokenize(texts[-1]).numpy().tolist() == want[-1]  # scalar input
    assert want[0] == [] and want[1] == []
    if do_lower_case:
        vocab = fast.vocab  # "ΣΑΣ" -> "σας": only the last sigma is final
        assert want[2][:3] == [vocab["σ"], vocab["##α"], vocab["##ς"]]


def test_lone_surrogates_are_the_documented_difference(oracle_flags, vocab_file):
    text = "ab\ud800cd e\udfff"
    # No string tensor can hold the `str`, so nothing can differ silently.
    with pytest.raises(ValueError, match="Error converting unicode string"):
        tf.constant(text)
    # Its bytes are invalid UTF-8, dropped by both; the original keeps the
    # surrogates only when given the `str` itself.
    raw = text.encode("utf-8", "surrogatepass")
    theirs = original.FullTokenizer(vocab_file)
    assert theirs.tokenize(raw) == theirs.tokenize("abcd e") != theirs.tokenize(text)
    got = _fast(vocab_file, True).tokenize(tf.constant([raw])).to_list()
    assert got == _original_ids(theirs, [raw])


def test_vocabulary_oddities_match(tmp_path):
    # Duplicate lines (the last one wins, as in full_tokenizer.load_vocab), a blank line,
    # a token longer than any word, and an unused "##" token.
    tokens = ["[UNK]", "a", "##b", "a", "", "##", "c" * 300, "ab", "##c"]
    vocab_path = _write_vocab(tmp_path / "vocab.txt", tokens)
    reference = full_tokenizer.FullTokenizer(vocab_path)
    texts = ["a ab abb abc b", "A", "c" * 199 + " " + "c" * 300, "", "a#b"]
    want = _original_ids(reference, texts)
    assert want[0][:2] == [3, 7]
    got = fast_tokenizer.FastFullTokenizer(vocab_path).tokenize(tf.constant(texts))
    assert got.to_list() == want


def test_bad_input_raises(tmp_path, vocab_file):
    no_unk = _write_vocab(tmp_path / "no_unk.txt", ["a", "b"])
    with pytest.raises(ValueError, match="no_unk.txt.*has no '\\[UNK\\]'"):
        fast_tokenizer.FastFullTokenizer(no_unk)
    huge = _write_vocab(tmp_path / "huge.txt", ["[UNK]", "\u00e9" * 150])
    with pytest.raises(ValueError, match="huge.txt', line 2.*more than 256 UTF-8 bytes"):
        fast_tokenizer.FastFullTokenizer(huge)
    with pytest.raises(ValueError, match="does not exist"):
        fast_tokenizer.FastFullTokenizer(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="expects a string tensor \\[batch\\]"):
        _fast(vocab_file, True).tokenize(tf.constant([["a"]]))
    with pytest.raises(ValueError, match="max_seq_length=1"):
        preprocessing.BertPreprocessor(vocab_file, max_seq_length=1)
    ids = tf.ragged.constant([[5]])
    with pytest.raises(ValueError, match="at least 3 for text pairs"):
        preprocessing.pack_inputs(ids, ids, 2, 101, 102)


# ----------------------------------------------------------------------------
# Graph contexts


def test_inside_tf_data(oracle_flags, vocab_file, corpus_bytes):
    texts = corpus_bytes[:600]
    fast = _fast(vocab_file, True)
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(97).map(fast.tokenize)
    got = [ids for batch in dataset for ids in batch.to_list()]
    assert got == _original_ids(original.FullTokenizer(vocab_file, True), texts)

    preprocessor = preprocessing.BertPreprocessor(vocab_file, max_seq_length=16)
    pairs = (tf.constant(texts[:300]), tf.constant(texts[300:600]))
    dataset = tf.data.Dataset.from_tensor_slices(pairs).batch(64).map(preprocessor)
    batches = list(dataset)
    for key, want in preprocessor(*pairs).items():
        got = np.concatenate([batch[key].numpy() for batch in batches])
        np.testing.assert_array_equal(got, want.numpy(), err_msg=key)


_LOAD_IN_FRESH_PROCESS = """
import sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # registers the WordPiece op the SavedModel uses

model = tf.saved_model.load(sys.argv[1])
texts = tf.constant(np.load(sys.argv[2], allow_pickle=True)["texts"])
ids = model.tokenize(texts)
packed = model.preprocess(texts[:-1], texts[1:])
np.savez(sys.argv[3], values=ids["values"], row_splits=ids["row_splits"],
         **{k: v.numpy() for k, v in packed.items()})
"""


class _Serving(tf.Module):
    def __init__(self, preprocessor):
        super().__init__()
        self.preprocessor = preprocessor

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, texts):
        ids = self.preprocessor.tokenizer.tokenize(texts)
        return {"values": ids.values, "row_splits": ids.row_splits}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    def preprocess(self, text_a, text_b):
        return self.preprocessor(text_a, text_b)


@pytest.mark.slow
def test_saved_model_in_fresh_process(tmp_path, vocab_file, corpus_bytes):
    texts = corpus_bytes[:200]
    preprocessor = preprocessing.BertPreprocessor(vocab_file, max_seq_length=24)
    tf.saved_model.save(_Serving(preprocessor), str(tmp_path / "model"))
    np.savez(tmp_path / "in.npz", texts=np.array(texts, dtype=object))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    script = [sys.executable, "-c", _LOAD_IN_FRESH_PROCESS]
    args = [str(tmp_path / "model"), str(tmp_path / "in.npz"), str(tmp_path / "out.npz")]
    result = subprocess.run(script + args, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    out = np.load(tmp_path / "out.npz")

    expected = preprocessor.tokenizer.tokenize(tf.constant(texts))
    np.testing.assert_array_equal(out["values"], expected.values.numpy())
    np.testing.assert_array_equal(out["row_splits"], expected.row_splits.numpy())
    reference = full_tokenizer.FullTokenizer(vocab_file)
    for i in range(len(texts) - 1):
        want = packing.pack_tokens(
            reference.tokenize(texts[i]), reference.tokenize(texts[i + 1]), 24,
            reference.convert_tokens_to_ids,
        )  # fmt: skip
        for key in ("input_ids", "input_mask", "segment_ids"):
            assert out[key][i].tolist() == getattr(want, key), (key, texts[i], texts[i + 1])


# ----------------------------------------------------------------------------
# Packing


def _original_classifier_code():
    """`convert_single_example` & co. compiled from the original run_classifier.py."""
    path = os.path.join(os.path.dirname(bert.__file__), "run_classifier.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    wanted = {
        "InputExample",
        "InputFeatures",
        "PaddingInputExample",
        "convert_single_example",
        "_truncate_seq_pair",
    }
    body = [node for node in tree.body if getattr(node, "name", None) in wanted]
    assert len(body) == len(wanted)
    namespace = {"tokenization": original, "tf": tf.compat.v1}
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), namespace)
    return namespace


def test_truncated_pair_lengths_match_original_loop():
    truncate = _original_classifier_code()["_truncate_seq_pair"]
    pairs = [(len_a, len_b) for len_a in range(26) for len_b in range(26)]
    len_a, len_b = (tf.constant(column, tf.int64) for column in zip(*pairs, strict=True))
    for max_length in range(21):
        want = []
        for a, b in pairs:
            tokens_a, tokens_b = list(range(a)), list(range(b))
            truncate(tokens_a, tokens_b, max_length)
            want.append((len(tokens_a), len(tokens_b)))
        keep_a, keep_b = preprocessing.truncated_lengths_graph(len_a, len_b, max_length)
        got = list(zip(keep_a.numpy().tolist(), keep_b.numpy().tolist(), strict=True))
        assert got == want, max_length


def test_packing_matches_original_convert_single_example(oracle_flags, vocab_file, corpus_bytes):
    code = _original_classifier_code()
    tokenizer = original.FullTokenizer(vocab_file, do_lower_case=True)
    fast = _fast(vocab_file, True)
    # Pairs, pairs whose B is empty or has no tokens, and single texts.
    text_a = corpus_bytes[:300]
    text_b = corpus_bytes[300:600]
    text_b[::7] = [b""] * len(text_b[::7])
    text_b[3::7] = [b" \xc2\xad\t"] * len(text_b[3::7])
    ids_a = fast.tokenize(tf.constant(text_a))
    ids_b = fast.tokenize(tf.constant(text_b))
    # 3 and 4 leave no room for B: the original then drops its [SEP] too.
    for max_seq_length in (3, 4, 9, 40):
        for second in (text_b, None):
            ids = None if second is None else ids_b
            cls_id, sep_id = fast.vocab["[CLS]"], fast.vocab["[SEP]"]
            got = preprocessing.pack_inputs(ids_a, ids, max_seq_length, cls_id, sep_id)
            got = {key: value.numpy().tolist() for key, value in got.items()}
            for i, a in enumerate(text_a):
                b = None if second is None else second[i]
                example = code["InputExample"](guid=i, text_a=a, text_b=b, label="0")
                # ex_index >= 5: the original logs its first five examples only.
                want = code["convert_single_example"](5, example, ["0"], max_seq_length, tokenizer)
                for key in ("input_ids", "input_mask", "segment_ids"):
                    assert got[key][i] == getattr(want, key), (key, a, b)


def test_preprocessor_as_keras_model_and_config(vocab_file):
    preprocessor = preprocessing.BertPreprocessor(vocab_file, max_seq_length=8)
    text_a = keras.Input(shape=(), dtype="string")
    text_b = keras.Input(shape=(), dtype="string")
    model = keras.Model([text_a, text_b], preprocessor(text_a, text_b))
    outputs = model([tf.constant(["Hello, World!"]), tf.constant(["how are you today?"])])
    # [CLS] hello , world ! [SEP] how [SEP]: A keeps ceil(5 / 2), B the rest.
    assert outputs["input_ids"].numpy().tolist() == [[101, 7592, 1010, 2088, 102, 2129, 2024, 102]]
    assert outputs["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 1, 1, 1]]
    assert outputs["input_mask"].dtype == tf.int32
    clone = preprocessing.BertPreprocessor.from_config(preprocessor.get_config())
    assert clone.max_seq_length == 8 and clone.do_lower_case and clone.vocab_file == vocab_file


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize(
    "batch",
    [
        ["ΑΧΙΛΛΕΥΣ"],  # no complex character: the simple lower-casing path
        ["ΑΧΙΛΛΕΥΣ", "한국어 ΟΔΥΣΣΕΥΣ"],  # Hangul forces the general path for the batch
        ["the cat", "ΣΑΣ.", "ΑΣ ΑΣ"],
    ],
)
def test_final_sigma_in_each_lower_casing_path(oracle_flags, vocab_file, do_lower_case, batch):
    texts = [t.encode() for t in batch]
    want = _original_ids(original.FullTokenizer(vocab_file, do_lower_case), texts)
    assert _fast(vocab_file, do_lower_case).tokenize(tf.constant(texts)).to_list() == want
