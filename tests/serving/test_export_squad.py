"""export_model.py --task=squad: a question and a context in, in a process with only tensorflow
and tensorflow_text, the answer run_squad.py's predictions.json holds (windows, n-best rules and
get_final_text in the graph), for SQuAD 1.1 and 2.0."""

import json
import math
import os
import sys

import pytest

from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.squad_tasks import write_squad
from tests.serving.fresh_process import run_fresh, saved_model_cli_signatures

# Contexts that exercise the answer text: case, accents, punctuation glued to words, a word the
# tokenizer splits, runs of spaces, tabs and newlines between words.
_HARD = [
    (
        "Who founded Café Zürich?",
        "Café  Zürich (1901) was founded by\tMarie-Louise Dupont, a baker.",
    ),
    ("When did it open?", "It opened on 3 May 1901;\n\nthe doors closed in 1999 — after 98 years."),
    ("What is unaffable?", "The word \u201cunaffable\u201d means not affable, i.e. rude."),
]


def _with_hard(data):
    paragraphs = data["data"][0]["paragraphs"]
    for index, (question, context) in enumerate(_HARD):
        qa = {"id": f"hard{index}", "question": question, "answers": []}
        if data["version"] == "v2.0":
            qa["is_impossible"] = True
        paragraphs.append({"context": context, "qas": [qa]})
    return data


def _examples(data):
    return [
        (qa["id"], qa["question"], p["context"])
        for p in data["data"][0]["paragraphs"]
        for qa in p["qas"]
    ]


@pytest.fixture(scope="module")
def span_checkpoint(minilm_tf1, tmp_path_factory):
    """MiniLM with a random span head whose logits are far apart (no near ties)."""
    sys.path.insert(0, REPO)
    import numpy as np

    from modeling import tf1_checkpoint

    root = tmp_path_factory.mktemp("squad_export")
    arrays = tf1_checkpoint.read_checkpoint(str(minilm_tf1 / "bert_model.ckpt"))
    rng = np.random.default_rng(1)
    arrays["cls/squad/output_weights"] = rng.normal(0, 1, (2, 384)).astype(np.float32)
    arrays["cls/squad/output_bias"] = np.zeros(2, np.float32)
    return tf1_checkpoint.save_tf1_checkpoint(arrays, str(root / "ckpt" / "model.ckpt"))


_COMMON = [
    "--max_seq_length=64",
    "--doc_stride=24",
    "--max_query_length=12",
    "--do_lower_case=true",
]


def _predict(minilm_tf1, checkpoint, data_path, out, *extra):
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_squad.py"),
            f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
            f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
            f"--init_checkpoint={checkpoint}",
            *_COMMON,
            f"--predict_file={data_path}",
            "--predict_batch_size=16",
            f"--output_dir={out}",
            "--do_predict",
            *extra,
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / "predictions.json").read_text())


def _export(minilm_tf1, checkpoint, export_dir, *extra):
    return run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            "--task=squad",
            f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
            f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
            *_COMMON,
            f"--checkpoint={checkpoint}",
            f"--export_dir={export_dir}",
            *extra,
        ],
        timeout=600,
    )


_ANSWER = """
import tensorflow as tf
import tensorflow_text  # noqa: F401
serve = tf.saved_model.load(INPUTS["export"]).signatures["serving_default"]
out = serve(question=tf.constant(INPUTS["questions"]), context=tf.constant(INPUTS["contexts"]))
OUTPUTS = {
    k: [x.decode() if isinstance(x, bytes) else x for x in v.numpy().tolist()]
    for k, v in out.items()
}
"""


def _serve(tmp_path, export_dir, examples):
    return run_fresh(
        tmp_path,
        "answer",
        _ANSWER,
        {
            "export": str(export_dir),
            "questions": [q for _, q, _ in examples],
            "contexts": [c for _, _, c in examples],
        },
    )


def _check_offsets(got, examples):
    for answer, start, end, (_, _, context) in zip(
        got["answer"], got["start_char"], got["end_char"], examples, strict=True
    ):
        if answer in ("", "empty"):
            continue
        # The answer is the context's own characters (its whitespace runs as single spaces).
        assert " ".join(context[start:end].split()) == answer, (answer, context[start:end])


@pytest.mark.slow
def test_squad_1_1_answers_equal_predictions_json(minilm_tf1, span_checkpoint, tmp_path):
    data = _with_hard(write_squad(tmp_path / "dev.json", 12, seed=5, num_people=3))
    (tmp_path / "dev.json").write_text(json.dumps(data))
    expected = _predict(minilm_tf1, span_checkpoint, tmp_path / "dev.json", tmp_path / "out")
    result = _export(minilm_tf1, span_checkpoint, tmp_path / "export")
    assert result.returncode == 0, result.stderr[-3000:]
    examples = _examples(data)
    got = _serve(tmp_path, tmp_path / "export", examples)
    assert got["answer"] == [expected[qid] for qid, _, _ in examples]
    assert "no_answer_probability" not in got
    _check_offsets(got, examples)
    signatures = saved_model_cli_signatures(tmp_path / "export")
    outputs = {"answer": "DT_STRING", "start_char": "DT_INT32", "end_char": "DT_INT32"}
    assert signatures["serving_default"] == (
        {"question": "DT_STRING", "context": "DT_STRING"},
        {**outputs, "score": "DT_FLOAT"},
    )
    assert signatures["serve_examples"] == (
        {"examples": "DT_STRING"},
        {"start_logits": "DT_FLOAT", "end_logits": "DT_FLOAT"},
    )


@pytest.mark.slow
def test_squad_2_0_answers_and_null_threshold(minilm_tf1, span_checkpoint, tmp_path):
    data = _with_hard(
        write_squad(tmp_path / "dev.json", 12, seed=6, unanswerable=0.5, num_people=3)
    )
    (tmp_path / "dev.json").write_text(json.dumps(data))
    _predict(
        minilm_tf1,
        span_checkpoint,
        tmp_path / "dev.json",
        tmp_path / "out",
        "--version_2_with_negative",
    )
    null_odds = json.loads((tmp_path / "out" / "null_odds.json").read_text())
    nbest = json.loads((tmp_path / "out" / "nbest_predictions.json").read_text())
    threshold = sorted(null_odds.values())[len(null_odds) // 2]
    # run_squad's rule at that threshold: "" where null score - best non-null > threshold.
    expected = {
        qid: "" if null_odds[qid] > threshold else next(e["text"] for e in entries if e["text"])
        for qid, entries in nbest.items()
    }
    assert 0 < sum(a == "" for a in expected.values()) < len(expected)

    # Without a threshold (no --do_eval file beside the checkpoint, no flag): one clear error.
    refused = _export(minilm_tf1, span_checkpoint, tmp_path / "export", "--version_2_with_negative")
    assert refused.returncode != 0
    assert "run_squad.py --do_eval --version_2_with_negative" in refused.stderr
    assert "--null_score_diff_threshold" in refused.stderr
    assert not (tmp_path / "export").exists()

    result = _export(
        minilm_tf1,
        span_checkpoint,
        tmp_path / "export",
        "--version_2_with_negative",
        f"--null_score_diff_threshold={threshold!r}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    examples = _examples(data)
    got = _serve(tmp_path, tmp_path / "export", examples)
    assert got["answer"] == [expected[qid] for qid, _, _ in examples]
    for (qid, _, _), probability in zip(examples, got["no_answer_probability"], strict=True):
        assert probability == pytest.approx(1 / (1 + math.exp(-null_odds[qid])), abs=1e-4)
    _check_offsets(got, examples)


def test_a_squad_2_0_model_answers_by_the_flag_or_else_the_dev_threshold(tmp_path):
    """The threshold rule of every SQuAD export (SavedModel and TFLite), without exporting."""
    import numpy as np

    from data.squad import evaluation
    from jobs.export.squad import squad_model
    from jobs.export.weights import Weights
    from jobs.export_run import ExportRun
    from tests.helpers.tiny_config import tiny_config
    from tests.helpers.tiny_exports import write_checkpoint
    from training.tasks import SquadTask

    config = tiny_config(vocab_size=64)
    write_checkpoint(SquadTask(config), tmp_path / "run", np.random.default_rng(0))
    weights = Weights.from_checkpoint(str(tmp_path / "run"))

    def threshold(**settings):
        run = ExportRun(
            task="squad", checkpoint=str(tmp_path / "run"), vocab_file="unused",
            do_lower_case=True, export_dir="unused", **settings,
        )  # fmt: skip
        return squad_model(run, config, weights)[1]

    assert threshold() == 0.0  # SQuAD 1.1 always answers.
    with pytest.raises(ValueError, match="run_squad.py --do_eval --version_2_with_negative"):
        threshold(version_2_with_negative=True)
    (tmp_path / "run" / evaluation.THRESHOLD_FILE).write_text("-1.25\n")
    assert threshold(version_2_with_negative=True) == -1.25
    both = dict(version_2_with_negative=True, null_score_diff_threshold=0.5)
    assert threshold(**both) == 0.5  # the flag wins over the file
