"""SQuAD answers from span logits: n-best lists, final answer text and the prediction files.

`write_predictions` turns the start/end logits of every feature into `predictions.json`,
`nbest_predictions.json` and (SQuAD 2.0) `null_odds.json`, byte for byte as the original
`run_squad.py` writes them; every setting the original read from flags is an argument here.
"""

import collections
import json
import math

from absl import logging

from data.squad.answer_choice import null_score, ranked, window_spans
from data.tokenization.full_tokenizer import BasicTokenizer
from fileio.atomic import write_atomically

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
RawResult.__doc__ = """The model's output for one feature.

Attributes:
    unique_id: the feature's `unique_id`.
    start_logits: float sequence [max_seq_length], one score per position for the answer start.
    end_logits: float sequence [max_seq_length], likewise for the answer end.
"""

# A span candidate: positions in one feature's tokens and their logits.
_Candidate = collections.namedtuple(
    "_Candidate", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"]
)
# `words`: the span's first and last word in the example's doc_tokens (None for no answer).
_NbestEntry = collections.namedtuple(
    "_NbestEntry", ["text", "start_logit", "end_logit", "words"], defaults=(None,)
)


def _strip_spaces(text):
    """Returns `text` without " " and, per remaining character, its index in `text`."""
    kept = [i for i, char in enumerate(text) if char != " "]
    return "".join(text[i] for i in kept), kept


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=False):
    """Returns the part of `orig_text` that the normalised prediction `pred_text` stands for.

    The prediction is built from WordPiece tokens, which are lower-cased, accent-stripped and
    split from punctuation; the original words around it may hold more (`pred_text` "steve
    smith" in `orig_text` "Steve Smith's" gives "Steve Smith"). `orig_text` goes through the
    same `BasicTokenizer`; when it and the result have the same characters apart from spaces,
    they are aligned character by character and the prediction is mapped back. Otherwise
    (e.g. the tokenizer dropped control characters or combining accents, or `pred_text` holds
    `[UNK]`) the whole `orig_text` is returned. Graph twin:
    `serving.exports.squad_answer_choice.final_text_graph`.

    Args:
        pred_text: the prediction as detokenized WordPiece text.
        orig_text: the original words of the predicted span, joined by spaces.
        do_lower_case: whether the tokenizer lower-cases (as the model's vocabulary).
        verbose_logging: log why an alignment failed.

    Returns:
        The answer text (`str`).
    """
    tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
    start = tok_text.find(pred_text)
    if start == -1:
        if verbose_logging:
            logging.info("Unable to find text: '%s' in '%s'", pred_text, orig_text)
        return orig_text
    end = start + len(pred_text) - 1

    orig_ns_text, orig_ns_to_s = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info(
                "Length not equal after stripping spaces: '%s' vs '%s'", orig_ns_text, tok_ns_text
            )
        return orig_text
    # Equal lengths: the i-th non-space characters of both texts are taken to correspond.
    tok_s_to_ns = {s: ns for ns, s in enumerate(tok_ns_to_s)}
    if start not in tok_s_to_ns:
        if verbose_logging:
            logging.info("Couldn't map start position")
        return orig_text
    if end not in tok_s_to_ns:
        if verbose_logging:
            logging.info("Couldn't map end position")
        return orig_text
    return orig_text[orig_ns_to_s[tok_s_to_ns[start]] : orig_ns_to_s[tok_s_to_ns[end]] + 1]


def _softmax(scores):
    """Softmax of Python floats, summed left to right in plain float arithmetic.

    An explicit loop rather than `sum`, whose float summation is compensated from Python 3.12
    on: the probabilities must round exactly as the original's.
    """
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = 0.0
    for value in exps:
        total += value
    return [value / total for value in exps]


def _span_text(example, feature, start, end, do_lower_case, verbose_logging):
    """The answer text of tokens start..end of a feature, in the example's own characters."""
    tok_text = " ".join(feature.tokens[start : end + 1])
    # Glue split-off WordPieces back to their words.
    tok_text = tok_text.replace(" ##", "").replace("##", "")
    tok_text = " ".join(tok_text.strip().split())
    first_word = feature.token_to_orig_map[start]
    last_word = feature.token_to_orig_map[end]
    orig_text = " ".join(example.doc_tokens[first_word : last_word + 1])
    return get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)


def _predict_example(
    example,
    features,
    results,
    n_best_size,
    max_answer_length,
    do_lower_case,
    with_negative,
    verbose,
):
    """Returns (n-best entries, null score) of one example; the null score is None for 1.1."""
    candidates = []
    logits = []
    for feature_index, feature in enumerate(features):
        result = results.get(feature.unique_id)
        if result is None:
            raise ValueError(
                f"No result for feature {feature.unique_id} of question {example.qas_id!r}."
            )
        start_logits = [float(x) for x in result.start_logits]
        end_logits = [float(x) for x in result.end_logits]
        logits.append((start_logits, end_logits))
        for start, end in window_spans(
            start_logits,
            end_logits,
            feature.token_to_orig_map,
            feature.token_is_max_context,
            n_best_size,
            max_answer_length,
        ):
            candidates.append(
                _Candidate(feature_index, start, end, start_logits[start], end_logits[end])
            )
    # SQuAD 2.0: the null answer competes with the spans, from the window of the lowest null
    # score (all zeros where no window has one).
    score_null, null_window = null_score(logits)
    null = _Candidate(0, 0, 0, 0, 0)
    if null_window is not None:
        null_start, null_end = logits[null_window]
        null = _Candidate(null_window, 0, 0, null_start[0], null_end[0])
    if with_negative:
        candidates.append(null)
    candidates = ranked(candidates)

    nbest = []
    seen = set()
    for candidate in candidates:
        if len(nbest) >= n_best_size:
            break
        if candidate.start_index > 0:
            feature = features[candidate.feature_index]
            text = _span_text(
                example,
                feature,
                candidate.start_index,
                candidate.end_index,
                do_lower_case,
                verbose,
            )
            if text in seen:
                continue
        else:
            text = ""
        seen.add(text)
        words = None
        if candidate.start_index > 0:
            to_word = features[candidate.feature_index].token_to_orig_map
            words = (to_word[candidate.start_index], to_word[candidate.end_index])
        nbest.append(_NbestEntry(text, candidate.start_logit, candidate.end_logit, words))
    # SQuAD 2.0 always offers the null answer, even past n_best_size.
    if with_negative and "" not in seen:
        nbest.append(_NbestEntry("", null.start_logit, null.end_logit))
    if not nbest:  # no valid span at all (SQuAD 1.1)
        nbest.append(_NbestEntry("empty", 0.0, 0.0))
    return nbest, (score_null if with_negative else None)


def _write_json_atomically(path, value):
    """Writes `value` as the original does (indent 4, ASCII, newline), atomically."""
    write_atomically(path, json.dumps(value, indent=4) + "\n")


def write_predictions(
    all_examples,
    all_features,
    all_results,
    n_best_size,
    max_answer_length,
    do_lower_case,
    output_prediction_file,
    output_nbest_file,
    output_null_log_odds_file,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
    verbose_logging=False,
):
    """Chooses each question's answer and writes the original's three prediction files.

    For each example, the `n_best_size` highest start and end logits of each of its features
    are paired into valid spans (see `data.squad.answer_choice.window_spans`), ranked by start + end logit, turned
    into text (`get_final_text`) and deduplicated into an n-best list with softmax
    probabilities. SQuAD 1.1 predicts the best span. SQuAD 2.0 adds the null answer (the
    lowest [CLS] score over the features) and predicts "" when that score exceeds the best
    non-null span's score by more than `null_score_diff_threshold`.

    Where the original fails (SQuAD 2.0 with no non-null entry in the n-best list, or an
    example without features), this predicts "" and reports the null score itself in
    `null_odds.json`, as though the best span had scored 0.0, and logs a warning.

    Args:
        all_examples: list of `SquadExample`, in file order.
        all_features: list of `SquadFeatures` of those examples.
        all_results: iterable of `RawResult`, one per feature (any order).
        n_best_size: entries per n-best list, and top logits paired per feature.
        max_answer_length: longest answer, in WordPiece tokens.
        do_lower_case: whether the vocabulary is uncased.
        output_prediction_file: path of predictions.json (qas_id -> answer).
        output_nbest_file: path of nbest_predictions.json (qas_id -> list of
            {"text", "probability", "start_logit", "end_logit"}).
        output_null_log_odds_file: path of null_odds.json (qas_id -> null score minus best
            span score); written only for SQuAD 2.0.
        version_2_with_negative: SQuAD 2.0 (questions may have no answer).
        null_score_diff_threshold: see above.
        verbose_logging: log why `get_final_text` fell back to the original words.

    Returns:
        dict qas_id -> predicted answer text, in example order.

    Raises:
        ValueError: if a feature has no result.
    """
    logging.info("Writing predictions to: %s", output_prediction_file)
    logging.info("Writing nbest to: %s", output_nbest_file)
    features_by_example = collections.defaultdict(list)
    for feature in all_features:
        features_by_example[feature.example_index].append(feature)
    results = {int(result.unique_id): result for result in all_results}

    predictions = {}
    all_nbest = {}
    null_odds = {}
    for example_index, example in enumerate(all_examples):
        nbest, score_null = _predict_example(
            example,
            features_by_example[example_index],
            results,
            n_best_size,
            max_answer_length,
            do_lower_case,
            version_2_with_negative,
            verbose_logging,
        )
        probabilities = _softmax([entry.start_logit + entry.end_logit for entry in nbest])
        all_nbest[example.qas_id] = [
            {
                "text": entry.text,
                "probability": probability,
                "start_logit": entry.start_logit,
                "end_logit": entry.end_logit,
            }
            for entry, probability in zip(nbest, probabilities, strict=True)
        ]
        if not version_2_with_negative:
            predictions[example.qas_id] = nbest[0].text
            continue
        best = next((entry for entry in nbest if entry.text), None)
        if best is None:
            logging.warning(
                "Question %s has no non-null answer among the n-best; predicting no answer.",
                example.qas_id,
            )
            best = _NbestEntry("", 0.0, 0.0)
        score_diff = score_null - best.start_logit - best.end_logit
        null_odds[example.qas_id] = score_diff
        predictions[example.qas_id] = "" if score_diff > null_score_diff_threshold else best.text

    _write_json_atomically(output_prediction_file, predictions)
    _write_json_atomically(output_nbest_file, all_nbest)
    if version_2_with_negative:
        _write_json_atomically(output_null_log_odds_file, null_odds)
    return predictions


def best_answer(
    example, features, results, n_best_size, max_answer_length, do_lower_case, with_negative
):
    """One question's answer as `write_predictions` chooses it, for serving.

    Args:
        example: the `SquadExample`.
        features: its `SquadFeatures`.
        results: dict unique_id -> `RawResult` of those features.
        n_best_size, max_answer_length, do_lower_case: as for `write_predictions`.
        with_negative: SQuAD 2.0.

    Returns:
        (text, score, null score, words): SQuAD 1.1 the best entry (its start + end logit;
        "empty" without any valid span); SQuAD 2.0 the best non-null entry ("" and 0.0
        without one) and the lowest [CLS] score, before the null threshold is applied (None
        for 1.1); the first and last word of the answer's span in `example.doc_tokens`
        (None without one).
    """
    nbest, score_null = _predict_example(
        example, features, results, n_best_size, max_answer_length, do_lower_case,
        with_negative, False,
    )  # fmt: skip
    if not with_negative:
        best = nbest[0]
    else:
        best = next((entry for entry in nbest if entry.text), _NbestEntry("", 0.0, 0.0))
    return best.text, best.start_logit + best.end_logit, score_null, best.words
