"""Property tests on random text: three tokenizers, one behaviour.

`data.tokenization.full_tokenizer.FullTokenizer` must produce the tokens of the original
`bert.tokenization.FullTokenizer`, and `data.tokenization.fast_tokenizer.FastFullTokenizer`
their ids, for both casings. Two vocabularies: Google's real uncased one, and a
character vocabulary in which nearly every word splits into single characters,
so that any difference in cleaning, casing or splitting shows in the ids
instead of hiding behind `[UNK]`.
"""

import pytest
import tensorflow as tf
from bert import tokenization as original
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data.tokenization import fast_tokenizer, full_tokenizer
from tests.helpers.minilm import minilm_vocab

# Characters with special treatment somewhere in the pipeline: sigma and other
# context-dependent or multi-character case mappings, marks that NFD reorders
# or strips, every kind of space, control and format character, CJK, Hangul,
# punctuation and symbols.
_SPECIAL = (
    "ΣσςΌΑİıǅǈﬁẞßÅÉé\u0301\u0316\u0345\u0307\U0001d16d\U0001d165\u302e\U00016ff0\u1715"
    " \t\n\r\x00\x0b\x0c\x1c\x1f\x85\u00a0\u1680\u2000\u2028\u2029\u3000"
    "\u00ad\u200b\u200d\ufeff\ufffd\u061c\U000e0001"
    "中文\u4e00\u9fff\u3400\U00020000\U0002a6df\uf900\U0002f800한국어ひカ"
    ".,'-$+^`~!?¿…«»“”€©½Ⅻⓐ\U0001f600"
)
_ALPHABET = st.one_of(
    st.sampled_from(_SPECIAL),
    st.characters(max_codepoint=0x3000, codec="utf-8"),
    st.characters(codec="utf-8"),
)
# A few letters among the special characters, so that contexts such as a
# capital sigma after a cased letter, or marks in non-canonical order, are frequent.
_DENSE = st.sampled_from(
    "AaΣ.'İ \u0301\u0316\u0345\u02b0\u00ad\U0001d16d\U0001d165\u302e\U00016ff0"
)
_TEXTS = st.lists(
    st.one_of(st.text(_ALPHABET, max_size=40), st.text(_DENSE, max_size=12)),
    min_size=1,
    max_size=8,
)
_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.fixture(scope="module", autouse=True)
def _parsed_flags(oracle_flags):
    yield


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    """(name, do_lower_case) -> (original, ours, fast tokenize function)."""
    google = minilm_vocab()
    chars = [chr(cp) for cp in range(0x21, 0x3000)] + list(_SPECIAL)
    chars = sorted({c for c in chars if c.strip() and c.isprintable()})
    char_vocab = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    with open(char_vocab, "w", encoding="utf-8", newline="") as f:
        f.write("".join(t + "\n" for t in ["[UNK]"] + chars + ["##" + c for c in chars]))
    result = {}
    for name, path in (("google", google), ("chars", char_vocab)):
        for do_lower_case in (True, False):
            fast = fast_tokenizer.FastFullTokenizer(path, do_lower_case=do_lower_case)
            result[name, do_lower_case] = (
                original.FullTokenizer(path, do_lower_case=do_lower_case),
                full_tokenizer.FullTokenizer(path, do_lower_case=do_lower_case),
                tf.function(fast.tokenize, input_signature=[tf.TensorSpec([None], tf.string)]),
            )
    return result


def _check(tokenizers, texts):
    for (name, do_lower_case), (theirs, ours, fast) in tokenizers.items():
        want = [theirs.tokenize(text) for text in texts]
        assert [ours.tokenize(text) for text in texts] == want, (name, do_lower_case)
        want_ids = [theirs.convert_tokens_to_ids(tokens) for tokens in want]
        encoded = [t if isinstance(t, bytes) else t.encode("utf-8") for t in texts]
        got_ids = fast(tf.constant(encoded, tf.string)).to_list()
        assert got_ids == want_ids, (name, do_lower_case, texts)


@_SETTINGS
@given(texts=_TEXTS)
def test_random_text(tokenizers, texts):
    _check(tokenizers, texts)


@settings(_SETTINGS, max_examples=50)
@given(texts=st.lists(st.binary(max_size=30), min_size=1, max_size=8))
def test_random_bytes(tokenizers, texts):
    # Mostly invalid UTF-8: all three drop the bytes that do not decode.
    _check(tokenizers, texts)
