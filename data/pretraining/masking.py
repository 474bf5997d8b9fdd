"""Choosing masked-LM positions and their replacements, for both pretraining-data modes.

The faithful mode (`create_masked_lm_predictions`) makes the original's random draws in the
original's order (original_release.md §5.4): a full shuffle of the candidates, then two draws
per masked piece for the 80/10/10 choice. The fast mode (`sample_masked_lm_predictions`) picks
from the same distribution with fewer draws. Both share the candidates (single pieces, or whole
words when a "##" piece joins the previous word) and the number of positions to mask.
"""

from data.pretraining import random_draws


def non_special_positions(tokens, cls_id, sep_id):
    """Returns the positions of all tokens other than [CLS] and [SEP] (C-speed searches)."""
    special = []
    for special_id in (cls_id, sep_id):
        start = 0
        for _ in range(tokens.count(special_id)):
            start = tokens.index(special_id, start) + 1
            special.append(start - 1)
    positions = list(range(len(tokens)))
    for index in sorted(special, reverse=True):
        del positions[index]
    return positions


def whole_word_groups(tokens, vocab):
    """Returns the candidate groups for whole-word masking: each word's positions in order.

    A "##" piece joins the group before it; [CLS] and [SEP] belong to no group.
    """
    cls_id, sep_id, is_subword = vocab.cls_id, vocab.sep_id, vocab.is_subword
    groups = []
    for index, token in enumerate(tokens):
        if token == cls_id or token == sep_id:
            continue
        if groups and is_subword[token]:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def num_to_predict(num_tokens, masked_lm_prob, max_predictions_per_seq):
    """The original's count of positions to mask: round(len * prob), at least 1, capped."""
    return min(max_predictions_per_seq, max(1, int(round(num_tokens * masked_lm_prob))))


def create_masked_lm_predictions(
    tokens, masked_lm_prob, max_predictions_per_seq, vocab, rng, do_whole_word_mask=False
):
    """Chooses masked positions and their replacements with the original's draws.

    Args:
      tokens: Token ids of `[CLS] A [SEP] B [SEP]` (list of int) [seq_length].
      masked_lm_prob: Fraction of tokens to mask (of all tokens, [CLS]/[SEP] included).
      max_predictions_per_seq: Upper bound on masked positions.
      vocab: `Vocabulary` (special ids, "##" flags, random words).
      rng: The `random.Random` to draw from.
      do_whole_word_mask: Mask whole words (see `whole_word_groups`).

    Returns:
      (positions, replacements): masked positions in increasing order and the id each one gets
      (`[MASK]` 80%, unchanged 10%, a random vocabulary word 10%, drawn per piece).
    """
    if do_whole_word_mask:
        candidates = whole_word_groups(tokens, vocab)
    else:
        candidates = non_special_positions(tokens, vocab.cls_id, vocab.sep_id)
    random_draws.shuffle(rng, candidates)
    count = num_to_predict(len(tokens), masked_lm_prob, max_predictions_per_seq)
    if not do_whole_word_mask:
        # Single positions always fit, so the first `count` are taken.
        candidates = [[index] for index in candidates[:count]]
    chosen = []
    random_value, word_ids, mask_id = rng.random, vocab.word_ids, vocab.mask_id
    last_word = len(word_ids) - 1
    for group in candidates:
        if len(chosen) >= count:
            break
        # A whole word that does not fit is skipped; a later, shorter one may still fit.
        if len(chosen) + len(group) > count:
            continue
        for index in group:
            if random_value() < 0.8:
                replacement = mask_id
            elif random_value() < 0.5:
                replacement = tokens[index]
            else:
                replacement = word_ids[random_draws.randint(rng, 0, last_word)]
            chosen.append((index, replacement))
    chosen.sort()
    return [index for index, _ in chosen], [replacement for _, replacement in chosen]


def sample_masked_lm_predictions(
    tokens, masked_lm_prob, max_predictions_per_seq, vocab, rng, do_whole_word_mask=False
):
    """`create_masked_lm_predictions` with a lazy partial shuffle of the candidates.

    Candidates are visited in a uniformly random order, as after the original's full shuffle,
    but only as many are drawn as are visited; the 80/10/10 choice takes one draw per piece.

    Args and returns as `create_masked_lm_predictions`.
    """
    count = num_to_predict(len(tokens), masked_lm_prob, max_predictions_per_seq)
    random_value = rng.random
    if do_whole_word_mask:
        groups = whole_word_groups(tokens, vocab)
        chosen = []
        remaining = len(groups)
        for visit in range(remaining):
            if len(chosen) >= count:
                break
            pick = visit + int(random_value() * (remaining - visit))
            groups[visit], groups[pick] = groups[pick], groups[visit]
            # A whole word that does not fit is skipped; a later, shorter one may still fit.
            if len(chosen) + len(groups[visit]) <= count:
                chosen += groups[visit]
    else:
        chosen = non_special_positions(tokens, vocab.cls_id, vocab.sep_id)
        remaining = len(chosen)
        for visit in range(min(count, remaining)):
            pick = visit + int(random_value() * (remaining - visit))
            chosen[visit], chosen[pick] = chosen[pick], chosen[visit]
        del chosen[count:]
    chosen.sort()
    word_ids, mask_id = vocab.word_ids, vocab.mask_id
    replacements = []
    for index in chosen:
        draw = random_value()
        if draw < 0.8:
            replacements.append(mask_id)
        elif draw < 0.9:
            replacements.append(tokens[index])
        else:
            replacements.append(word_ids[int(random_value() * len(word_ids))])
    return chosen, replacements
