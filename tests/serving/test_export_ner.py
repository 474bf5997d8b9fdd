"""export_model.py --task=ner: sentences in, in a process with only tensorflow and
tensorflow_text, tag every word exactly as run_ner.py's test_predictions.txt, windows included."""

import os
import sys

import pytest

from tests.helpers.paths import TESTDATA
from tests.helpers.scripts import REPO, run_in_repo
from tests.serving.fresh_process import run_fresh, saved_model_cli_signatures

CONLL = os.path.join(TESTDATA, "conll2003")
# A word whose tokenization is empty (a zero-width space), and a sentence far longer than one
# window: both must still get a tag.
_EXTRA = (
    "\n".join(
        ["Peter NNP B-NP B-PER", "\u200b NN I-NP O", "visited VBD B-VP O"]
        + [f"{w} NNP B-NP O" for w in ("Berlin", "and", "then", "Paris", "with", "Anna") * 5]
    )
    + "\n"
)


def _sentences(path, column=0):
    """One column (0: the words; -1: the appended predicted tags) of each sentence of a CoNLL
    file, -DOCSTART- lines skipped."""
    sentences, current = [], []
    for line in open(path, encoding="utf-8").read().split("\n"):
        if not line.strip() or line.startswith("-DOCSTART-"):
            if current:
                sentences.append(current)
            current = []
        else:
            current.append(line.split(" ")[column])
    return sentences + ([current] if current else [])


_LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


@pytest.fixture(scope="module")
def ner_run(minilm_tf1, tmp_path_factory):
    """run_ner.py --do_predict with MiniLM and a random tagging head whose logits are far apart
    (so that float rounding cannot flip a tag), and the export of the same checkpoint."""
    sys.path.insert(0, REPO)
    import numpy as np

    from modeling import tf1_checkpoint

    root = tmp_path_factory.mktemp("ner_export")
    data, out = root / "data", root / "out"
    data.mkdir()
    test = open(os.path.join(CONLL, "test.txt"), encoding="utf-8").read()
    (data / "test.txt").write_text(test.rstrip("\n") + "\n\n" + _EXTRA, encoding="utf-8")
    (root / "labels.txt").write_text("\n".join(_LABELS) + "\n")
    arrays = tf1_checkpoint.read_checkpoint(str(minilm_tf1 / "bert_model.ckpt"))
    rng = np.random.default_rng(0)
    arrays["cls/ner/output_weights"] = rng.normal(0, 1, (len(_LABELS), 384)).astype(np.float32)
    arrays["cls/ner/output_bias"] = rng.normal(0, 1, len(_LABELS)).astype(np.float32)
    prefix = tf1_checkpoint.save_tf1_checkpoint(arrays, str(root / "ckpt" / "model.ckpt"))
    common = [
        f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
        f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
        f"--label_file={root / 'labels.txt'}",
        "--do_lower_case=true",
        "--max_seq_length=16",
        "--doc_stride=5",
    ]
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_ner.py"),
            *common,
            f"--data_dir={data}",
            f"--init_checkpoint={prefix}",
            "--predict_batch_size=32",
            "--document_context=false",
            f"--output_dir={out}",
            "--do_predict",
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    export = root / "export"
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            "--task=ner",
            *common,
            f"--checkpoint={prefix}",
            f"--export_dir={export}",
        ],
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {"data": data, "out": out, "export": export}


_TAG = """
import tensorflow as tf
import tensorflow_text  # noqa: F401
model = tf.saved_model.load(INPUTS["export"])
out = model.signatures["serving_default"](text=tf.constant(INPUTS["texts"]))
words, tags = model.tag(tf.constant(INPUTS["texts"]))
decode = lambda rows: [[x.decode() for x in row] for row in rows]
count = out["num_words"].numpy().tolist()
OUTPUTS = {
    "words": [row[:n] for row, n in zip(decode(out["words"].numpy().tolist()), count)],
    "tags": [row[:n] for row, n in zip(decode(out["tags"].numpy().tolist()), count)],
    "ragged_words": decode(words.to_list()),
    "ragged_tags": decode(tags.to_list()),
}
"""


@pytest.mark.slow
def test_tags_equal_test_predictions(ner_run, tmp_path):
    sentences = _sentences(ner_run["data"] / "test.txt")
    expected = _sentences(ner_run["out"] / "test_predictions.txt", column=-1)
    assert [len(s) for s in sentences] == [len(t) for t in expected]
    assert len({t for row in expected for t in row}) > 1, "a model that tags one class"
    # Tabs and repeated spaces separate words as the CoNLL reader's columns do.
    texts = [" ".join(words) for words in sentences]
    texts[0] = "\t" + texts[0].replace(" ", " \t  ") + " "
    got = run_fresh(tmp_path, "tag", _TAG, {"export": str(ner_run["export"]), "texts": texts})
    assert got["words"] == sentences
    assert got["tags"] == expected
    assert got["ragged_words"] == sentences and got["ragged_tags"] == expected


@pytest.mark.slow
def test_saved_model_cli_lists_the_signatures(ner_run):
    signatures = saved_model_cli_signatures(ner_run["export"])
    assert signatures["serving_default"] == (
        {"text": "DT_STRING"},
        {"words": "DT_STRING", "tags": "DT_STRING", "num_words": "DT_INT32"},
    )
    assert signatures["serve_examples"] == (
        {"examples": "DT_STRING"},
        {"tag_ids": "DT_INT32", "tags": "DT_STRING"},
    )
