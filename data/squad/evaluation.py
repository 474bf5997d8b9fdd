"""SQuAD scores by the official definitions (evaluate-v1.1.py and evaluate-v2.0.py of the SQuAD
site), and the SQuAD 2.0 null-score threshold that run_squad.py --do_eval finds on dev.

* An answer is normalised (lower case, punctuation and the articles a/an/the removed,
  whitespace collapsed); exact match compares normalised strings, F1 their whitespace tokens.
* v1.1: the best score over a question's gold answers, averaged over every question of the
  file (a question without a prediction scores 0), in percent: `exact_match`, `f1`.
* v2.0: a question without a usable gold answer has "" as its only answer; a question whose
  no-answer score (`null_odds.json`) exceeds 1.0 counts as predicted no-answer, as the official
  script does with `--na-prob-file` and its default `--na-prob-thresh`; `exact`, `f1`,
  `total`, `HasAns_*`, `NoAns_*`, and `best_exact`/`best_f1` with their thresholds: the score
  the predictions would reach with the best no-answer threshold.
"""

import collections
import re
import string

# The file beside a run's checkpoints where run_squad --do_eval saves the best SQuAD 2.0 null
# threshold, and where export_model.py --task=squad reads it.
THRESHOLD_FILE = "best_null_score_diff_threshold"

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text):
    """Lower case, no punctuation, no articles, single spaces (the official normalisation)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_score(gold, predicted):
    return int(normalize_answer(gold) == normalize_answer(predicted))


def f1_score(gold, predicted, empty_matches=False):
    """Token F1 of two answers; with `empty_matches` (v2.0), two empty answers score 1."""
    gold_tokens = normalize_answer(gold).split()
    predicted_tokens = normalize_answer(predicted).split()
    if empty_matches and (not gold_tokens or not predicted_tokens):
        return int(gold_tokens == predicted_tokens)
    common = sum(
        (collections.Counter(gold_tokens) & collections.Counter(predicted_tokens)).values()
    )
    if common == 0:
        return 0
    precision, recall = common / len(predicted_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def questions(dataset):
    """Every question dict of a SQuAD "data" list, in file order."""
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def evaluate_v1(dataset, predictions):
    """{"exact_match", "f1"} in percent over every question of `dataset` (the "data" list)."""
    exact = f1 = total = 0
    for qa in questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            continue
        golds = [answer["text"] for answer in qa["answers"]]
        predicted = predictions[qa["id"]]
        exact += max(exact_score(g, predicted) for g in golds)
        f1 += max(f1_score(g, predicted) for g in golds)
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def _raw_scores(qas, predictions):
    exact, f1 = {}, {}
    for qa in qas:
        golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
        predicted = predictions[qa["id"]]
        exact[qa["id"]] = max(exact_score(g, predicted) for g in golds)
        f1[qa["id"]] = max(f1_score(g, predicted, empty_matches=True) for g in golds)
    return exact, f1


def _best_threshold(predictions, scores, null_odds, has_answer):
    """The official search: walk questions by increasing no-answer score, answering each."""
    current = best = sum(1 for qid in scores if not has_answer[qid])
    threshold = 0.0
    for qid in sorted(null_odds, key=null_odds.get):
        if qid not in scores:
            continue
        if has_answer[qid]:
            current += scores[qid]
        else:
            current -= 1 if predictions[qid] else 0
        if current > best:
            best, threshold = current, null_odds[qid]
    return 100.0 * best / len(scores), threshold


def evaluate_v2(dataset, predictions, null_odds, answers_for_threshold=None):
    """The official v2.0 metrics of the questions that have a prediction.

    Args:
        dataset: the file's "data" list.
        predictions: qas_id -> answer ("" for no answer).
        null_odds: qas_id -> no-answer score (null_odds.json).
        answers_for_threshold: qas_id -> the best non-empty answer, for the `best_*` search
            (so that every threshold is tried with the answer it would give); default
            `predictions`, as the official script.

    Returns:
        dict of the official keys (percentages; `*_thresh` in null-score units).
    """
    answered = [qa for qa in questions(dataset) if qa["id"] in predictions]
    has_answer = {
        qa["id"]: any(normalize_answer(a["text"]) for a in qa["answers"]) for qa in answered
    }
    exact, f1 = _raw_scores(answered, predictions)
    predicted_null = {qid: null_odds[qid] > 1.0 for qid in exact}
    exact = {q: float(not has_answer[q]) if predicted_null[q] else s for q, s in exact.items()}
    f1 = {q: float(not has_answer[q]) if predicted_null[q] else s for q, s in f1.items()}

    def totals(qids):
        return {
            "exact": 100.0 * sum(exact[q] for q in qids) / len(qids),
            "f1": 100.0 * sum(f1[q] for q in qids) / len(qids),
            "total": len(qids),
        }

    results = totals(list(exact))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [q for q in exact if has_answer[q] == wanted]
        if qids:
            results.update({f"{prefix}_{k}": v for k, v in totals(qids).items()})
    search = answers_for_threshold if answers_for_threshold is not None else predictions
    raw_exact, raw_f1 = _raw_scores(answered, search)
    for name, scores in (("exact", raw_exact), ("f1", raw_f1)):
        best, threshold = _best_threshold(search, scores, null_odds, has_answer)
        results[f"best_{name}"], results[f"best_{name}_thresh"] = best, threshold
    return results


def best_non_null_answers(nbest):
    """qas_id -> the first non-empty text of each n-best list (nbest_predictions.json), or ""."""
    return {
        qid: next((entry["text"] for entry in entries if entry["text"]), "")
        for qid, entries in nbest.items()
    }
