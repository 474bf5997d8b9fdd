"""`tokenizer.json`: the model's WordPiece for the `tokenizers` library, shipped beside a TFLite
export so that a server without this project (or TensorFlow) gets the ids `FullTokenizer` gives.

The settings that make them identical: BERT's normalizer (control characters dropped,
whitespace to spaces, CJK ideographs spaced out; lower case and accents stripped exactly when
`do_lower_case`), BERT's pre-tokenizer (whitespace and punctuation), WordPiece with `##`,
`[UNK]` and the original's 200-character limit, and no added tokens: the original reads
`[CLS]` in raw text as the characters `[`, `cls`, `]`, never as the special token. Python's
and the library's Unicode tables differ on characters added since Unicode 13 (a few hundred,
none in common text), which can split differently.
"""

import json

from data.tokenization.full_tokenizer import load_vocab
from fileio.atomic import write_atomically


def tokenizer_json(vocab_file, do_lower_case):
    """The `tokenizers` JSON of the model's tokenizer, as a dict."""
    vocab = load_vocab(vocab_file)
    ids = {token: vocab[token] for token in ("[CLS]", "[SEP]") if token in vocab}
    post_processor = None
    if len(ids) == 2:
        # [CLS] A [SEP] (B [SEP]), type ids 0 then 1, as the original's records.
        post_processor = {
            "type": "BertProcessing",
            "sep": ["[SEP]", ids["[SEP]"]],
            "cls": ["[CLS]", ids["[CLS]"]],
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                # The original's cleaning: NUL, U+FFFD and control or format characters
                # dropped, whitespace to spaces. The library's own (`clean_text`) also drops
                # private-use characters, which the original keeps (as [UNK] words).
                {
                    "type": "Replace",
                    "pattern": {"Regex": "[[\\x00\\x{FFFD}\\p{Cc}\\p{Cf}]&&[^\\t\\n\\r]]"},
                    "content": "",
                },
                {"type": "Replace", "pattern": {"Regex": "[\\t\\n\\r\\p{Zs}]"}, "content": " "},
                {
                    "type": "BertNormalizer",
                    "clean_text": False,
                    "handle_chinese_chars": True,
                    "strip_accents": bool(do_lower_case),
                    "lowercase": bool(do_lower_case),
                },
            ],
        },
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": post_processor,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 200,
            "vocab": dict(vocab),
        },
    }


def write_tokenizer_json(path, vocab_file, do_lower_case):
    """Writes `tokenizer_json(...)` to `path`, atomically."""
    text = json.dumps(tokenizer_json(vocab_file, do_lower_case), ensure_ascii=False)
    write_atomically(path, text + "\n")
