"""Writes a small pre-training corpus from the docstrings of Python's standard library.

One sentence per line, a blank line between documents (one document per module), the input
format of create_pretraining_data.py. The text is on every machine with Python, so the demo
needs no download.

    python scripts/stdlib_corpus.py OUTPUT_FILE
"""

import importlib
import inspect
import re
import sys

MODULES = (
    "argparse asyncio collections contextlib csv dataclasses datetime decimal difflib email "
    "enum fractions functools gzip heapq http.client inspect ipaddress itertools json logging "
    "pathlib pickle queue random shutil socket statistics string subprocess tarfile tempfile "
    "textwrap threading typing unittest urllib.parse uuid zipfile"
).split()

# A sentence ends at . ! or ? followed by whitespace and a capital letter.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def module_sentences(name):
    module = importlib.import_module(name)
    docs = [inspect.getdoc(module) or ""]
    for _, member in inspect.getmembers(module):
        if (inspect.isclass(member) or inspect.isfunction(member)) and getattr(
            member, "__module__", ""
        ) == name:
            docs.append(inspect.getdoc(member) or "")
    text = " ".join(" ".join(doc.split()) for doc in docs)
    return [s for s in _SENTENCE_END.split(text) if len(s) > 20]


def main(path):
    with open(path, "w", encoding="utf-8") as out:
        for name in MODULES:
            out.write("\n".join(module_sentences(name)) + "\n\n")


if __name__ == "__main__":
    main(sys.argv[1])
