"""run_squad.py end to end with real weights (the span head and loss against the original's are
in tests/training/test_tasks.py)."""

import json
import os
import sys

import pytest
from official.nlp.tools import squad_evaluate_v1_1, squad_evaluate_v2_0

from data.dev_metrics import read_eval_history, read_eval_results
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.squad_tasks import write_squad


def _run(minilm_tf1, out, *extra):
    cmd = [
        sys.executable,
        os.path.join(REPO, "run_squad.py"),
        f"--vocab_file={minilm_tf1 / 'vocab.txt'}",
        f"--bert_config_file={minilm_tf1 / 'bert_config.json'}",
        f"--init_checkpoint={minilm_tf1 / 'bert_model.ckpt'}",
        "--max_seq_length=64",
        "--doc_stride=32",
        "--max_query_length=16",
        "--train_batch_size=16",
        "--predict_batch_size=16",
        "--learning_rate=1e-4",
        f"--output_dir={out}",
        "--log_every_steps=20",
        "--iterations_per_loop=20",
        *extra,
    ]
    return run_in_repo(cmd, timeout=900)


def _eval_results(out):
    lines = (out / "eval_results.txt").read_text().splitlines()
    return dict(line.split(" = ") for line in lines)


def _load(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def trained(minilm_tf1, tmp_path_factory):
    """One fine-tuning of MiniLM on SQuAD 2.0 data (--do_train --do_eval): its output folder,
    files and stderr. Questions that the paragraph answers teach the spans SQuAD 1.1 asks for;
    the others teach the null answer."""
    root = tmp_path_factory.mktemp("squad_trained")
    train = write_squad(root / "train.json", num_paragraphs=200, seed=2, unanswerable=0.5)
    dev = write_squad(root / "dev.json", num_paragraphs=30, seed=3, unanswerable=0.5)
    out = root / "out"
    files = [f"--train_file={root / 'train.json'}", f"--predict_file={root / 'dev.json'}"]
    questions = sum(len(p["qas"]) for p in train["data"][0]["paragraphs"])
    steps = int(questions / 16 * 3)
    # At 1e-4 (enough for 1.1) the loss on these 2.0 data can spike early and the model then
    # answers every question of a paragraph alike (seen on one machine, not on another).
    result = _run(
        minilm_tf1,
        out,
        "--version_2_with_negative",
        "--do_train",
        "--do_eval",
        "--num_train_epochs=3",
        "--learning_rate=5e-5",
        # Dev evaluations halfway and at the end (eval_history.jsonl, best_checkpoint/).
        f"--eval_every_steps={steps // 2}",
        *files,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {"out": out, "dev": dev, "files": files, "stderr": result.stderr, "steps": steps}


@pytest.mark.slow
def test_dev_evaluations_score_f1(trained):
    """Every dev evaluation is the official F1 on --predict_file; the last is eval_results'."""
    steps, out = trained["steps"], trained["out"]
    history = read_eval_history(out)
    assert [e["step"] for e in history] == [*range(steps // 2, steps, steps // 2), steps]
    assert {e["metric"] for e in history} == {"f1"}
    assert all("predicted_classes" not in e for e in history)
    final = read_eval_results(out)
    assert history[-1]["value"] == pytest.approx(final["f1"], abs=1e-4)
    best = read_eval_results(out / "best_checkpoint")
    assert best["f1"] == pytest.approx(max(e["value"] for e in history), abs=1e-4)


@pytest.mark.slow
def test_fine_tuning_answers_squad_1_1(minilm_tf1, trained, tmp_path):
    """The fine-tuned checkpoint answers a SQuAD 1.1 dev set (no unanswerable questions, no
    --version_2_with_negative): the 1.1 evaluation, its files and nothing of 2.0's."""
    # The steps counted in examples as the original: int(examples / 16 * 3).
    assert f"Num steps = {trained['steps']}" in trained["stderr"]
    dev = write_squad(tmp_path / "dev.json", num_paragraphs=30, seed=1)
    out = tmp_path / "out"
    result = _run(
        minilm_tf1,
        out,
        "--do_train=false",
        "--do_eval",
        f"--init_checkpoint={trained['out']}/model.ckpt-{trained['steps']}",
        f"--predict_file={tmp_path / 'dev.json'}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    predictions = _load(out / "predictions.json")
    qids = [qa["id"] for p in dev["data"][0]["paragraphs"] for qa in p["qas"]]
    assert list(predictions) == qids
    # tf-models-official's port of the official evaluate-v1.1.py (fractions, not percents).
    # Measured: 0.98 and 0.98.
    scores = squad_evaluate_v1_1.evaluate(dev["data"], predictions)
    assert scores["exact_match"] >= 0.8 and scores["final_f1"] >= 0.8, scores
    # --do_eval wrote the same scores (in percent, as the official script prints them).
    results = _eval_results(out)
    assert float(results["exact_match"]) == pytest.approx(100 * scores["exact_match"], abs=1e-4)
    assert float(results["f1"]) == pytest.approx(100 * scores["final_f1"], abs=1e-4)
    assert not (out / "best_null_score_diff_threshold").exists()
    nbest = _load(out / "nbest_predictions.json")
    assert list(nbest) == qids
    first = nbest[qids[0]]
    assert 1 <= len(first) <= 20
    assert list(first[0]) == ["text", "probability", "start_logit", "end_logit"]
    assert first[0]["text"] == predictions[qids[0]]
    assert abs(sum(e["probability"] for e in first) - 1.0) < 1e-6
    assert not (out / "null_odds.json").exists()

    # The same predictions in bfloat16 (matrix products in bfloat16, logits in float32): the
    # float32 answers (measured: all the same).
    bf16 = _run(
        minilm_tf1,
        tmp_path / "bf16",
        "--do_train=false",
        "--do_predict",
        "--precision=mixed_bfloat16",
        f"--init_checkpoint={trained['out']}/model.ckpt-{trained['steps']}",
        f"--predict_file={tmp_path / 'dev.json'}",
    )
    assert bf16.returncode == 0, bf16.stderr[-3000:]
    answers = _load(tmp_path / "bf16" / "predictions.json")
    assert list(answers) == qids
    same = sum(answers[q] == predictions[q] for q in qids) / len(qids)
    assert same >= 0.95, same
    # ... from logits that bfloat16 rounding moved (a run left in float32 would match exactly).
    bf16_nbest = _load(tmp_path / "bf16" / "nbest_predictions.json")
    moved = [
        abs(bf16_nbest[q][0]["start_logit"] - nbest[q][0]["start_logit"])
        for q in qids
        if answers[q] == predictions[q]
    ]
    assert 0 < max(moved) < 2.0, max(moved)


@pytest.mark.slow
def test_squad_2_0_null_odds_and_threshold(minilm_tf1, trained):
    out, dev = trained["out"], trained["dev"]
    common = ["--version_2_with_negative", *trained["files"]]
    predictions = _load(out / "predictions.json")
    null_odds = _load(out / "null_odds.json")
    assert list(null_odds) == list(predictions)
    # The port of evaluate-v2.0.py, with null_odds.json as its --na-prob-file (percents).
    # Measured: HasAns_f1 97.
    scores = squad_evaluate_v2_0.evaluate(dev["data"], predictions, null_odds)
    assert scores["HasAns_f1"] >= 80, dict(scores)
    assert "NoAns_f1" in scores

    # --do_eval: the official scores, and the best threshold of the official search run on
    # each question's best non-null answer (so every threshold is tried with its answer).
    results = _eval_results(out)
    assert results["global_step"] == str(trained["steps"])
    for key in ("exact", "f1", "HasAns_f1", "NoAns_f1"):
        assert float(results[key]) == pytest.approx(scores[key], abs=1e-4), key
    nbest = _load(out / "nbest_predictions.json")
    non_null = {q: next((e["text"] for e in n if e["text"]), "") for q, n in nbest.items()}
    search = squad_evaluate_v2_0.evaluate(dev["data"], non_null, null_odds)
    threshold = float((out / "best_null_score_diff_threshold").read_text())
    assert threshold == search["final_f1_thresh"]
    assert float(results["best_f1"]) == pytest.approx(search["final_f1"], abs=1e-4)

    # The original's threshold tuning: predict again from the trained checkpoint with the
    # threshold found. "" exactly where null score - best non-null > threshold, and the
    # predictions reach the best F1 the search promised.
    again = _run(
        minilm_tf1,
        out,
        "--do_train=false",
        "--do_predict",
        f"--null_score_diff_threshold={threshold!r}",
        *common,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Resumed from" in again.stderr
    tuned = _load(out / "predictions.json")
    assert _load(out / "null_odds.json") == pytest.approx(null_odds, abs=1e-4)
    for qid, odds in null_odds.items():
        if odds > threshold + 1e-4:
            assert tuned[qid] == "", qid
        elif odds < threshold - 1e-4:
            assert tuned[qid] == non_null[qid], qid
    rescored = squad_evaluate_v2_0.evaluate(dev["data"], tuned)
    assert rescored["f1"] == pytest.approx(search["final_f1"], abs=1e-4)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--do_train=false"], "At least one of `do_train` or `do_predict` must be True."),
        (["--do_train"], "If `do_train` is True, then `train_file` must be specified."),
        (["--do_predict"], "If `do_predict` is True, then `predict_file` must be specified."),
        (
            ["--do_predict", "--predict_file=x.json", "--max_seq_length=19"],
            "The max_seq_length (19) must be greater than max_query_length (16) + 3",
        ),
        (
            ["--do_predict", "--predict_file=x.json", "--max_seq_length=1000"],
            "Cannot use sequence length 1000 because the BERT model was only trained up to "
            "sequence length 512: pass --max_seq_length=512 or less (max_position_embeddings "
            "in --bert_config_file).",
        ),
    ],
)
def test_startup_checks(minilm_tf1, tmp_path, extra, message):
    result = _run(minilm_tf1, tmp_path / "out", *extra)
    assert result.returncode != 0
    assert message in result.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_the_saved_null_threshold_is_the_best_f1_one(tmp_path):
    """Two questions whose best exact-match and best F1 thresholds differ: a partial answer
    (F1 0.8, exact 0) below an unanswerable question answered anyway."""
    import types

    from data.squad import evaluation
    from jobs import squad_run

    qas = [
        {"id": "a", "question": "what?", "answers": [{"text": "big red dog", "answer_start": 0}]},
        {"id": "b", "question": "who?", "answers": [], "is_impossible": True},
    ]
    dataset = {"data": [{"title": "t", "paragraphs": [{"context": "big red dog", "qas": qas}]}]}
    (tmp_path / "dev.json").write_text(json.dumps(dataset))
    null_odds = {"a": 1.0, "b": 2.0}
    predictions = {"a": "red dog", "b": "dog"}
    (tmp_path / "null_odds.json").write_text(json.dumps(null_odds))
    nbest = {qid: [{"text": text, "probability": 1.0}] for qid, text in predictions.items()}
    (tmp_path / "nbest_predictions.json").write_text(json.dumps(nbest))
    run = types.SimpleNamespace(
        predict_file=str(tmp_path / "dev.json"),
        output_dir=str(tmp_path),
        version_2_with_negative=True,
        null_score_diff_threshold=0.0,
    )
    squad_run._evaluate(run, predictions)
    official = squad_evaluate_v2_0.evaluate(dataset["data"], predictions, null_odds)
    assert official["final_f1_thresh"] != official["final_exact_thresh"]
    saved = float((tmp_path / evaluation.THRESHOLD_FILE).read_text())
    assert saved == official["final_f1_thresh"]
