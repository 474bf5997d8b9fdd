"""Pretraining instances (original_release.md §5.3): segment pairs cut from documents.

`create_instances` makes the original's instances from a tokenized `Corpus`, drawing from one
`random.Random` in the original's order: documents shuffled, every dupe, chunks of segments up
to a target length, A/B split, a random next segment half of the time, truncation, masking. Both
pretraining-data modes use it (`data.pretraining.create`, `data.pretraining.fast`). Instances are
held as offsets into the corpus's token array plus their masked positions, about 200 bytes each.
"""

import array
import dataclasses

from data.pretraining import random_draws
from data.pretraining.masking import create_masked_lm_predictions

# Examples logged in full, as the original.
LOGGED_EXAMPLES = 20


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """The original's generation settings (original_release.md §5.1); the flags of
    create_pretraining_data.py of the same names, which hold the original's defaults."""

    do_lower_case: bool
    do_whole_word_mask: bool
    max_seq_length: int
    max_predictions_per_seq: int
    random_seed: int
    dupe_factor: int
    masked_lm_prob: float
    short_seq_prob: float

    def validate(self):
        """Raises `ValueError` naming the flag if a setting cannot produce data.

        Values the original ran (no pass over the input, no masked piece, probabilities outside
        [0, 1]) are accepted and do what they did there; the runner warns about them.
        """
        if self.max_seq_length < 5:
            raise ValueError(
                f"--max_seq_length must be at least 5 ([CLS] A [SEP] B [SEP] with two tokens "
                f"left for A and B), got {self.max_seq_length}."
            )
        if self.max_predictions_per_seq < 0:
            raise ValueError(
                f"--max_predictions_per_seq must be at least 0, got "
                f"{self.max_predictions_per_seq}; about max_seq_length * masked_lm_prob is usual."
            )
        if self.masked_lm_prob != self.masked_lm_prob:
            raise ValueError("--masked_lm_prob must be a number, got nan; 0.15 is usual.")


# --- Instances -----------------------------------------------------------------------------


class InstanceStore:
    """Instances as corpus offsets: A = tokens[a_start:+a_len], B likewise, plus masking."""

    def __init__(self):
        self.a_start, self.b_start = array.array("q"), array.array("q")
        self.a_len, self.b_len = array.array("i"), array.array("i")
        self.random_next = array.array("b")
        self.mask_end = array.array("q")  # end offset of each instance's masked positions
        self.mask_positions, self.mask_tokens = array.array("i"), array.array("i")

    def __len__(self):
        return len(self.a_start)

    def add(self, a_start, a_len, b_start, b_len, is_random_next, tokens, positions, replacements):
        """Appends one instance; `tokens` (its unmasked ids) is not kept."""
        self.a_start.append(a_start)
        self.a_len.append(a_len)
        self.b_start.append(b_start)
        self.b_len.append(b_len)
        self.random_next.append(is_random_next)
        self.mask_positions.extend(positions)
        self.mask_tokens.extend(replacements)
        self.mask_end.append(len(self.mask_positions))


def add_document_instances(
    corpus, order, position, options, vocab, rng, store, masker=create_masked_lm_predictions
):
    """Appends the instances of one document to `store` (original_release.md §5.3).

    Args:
      corpus: The `Corpus`.
      order: Corpus document indexes in their shuffled order.
      position: Index into `order` of the document to use.
      options: `PretrainingOptions`.
      vocab: `Vocabulary`.
      rng: The `random.Random` to draw from.
      store: `InstanceStore` to append to.
      masker: Function with the arguments and result of `create_masked_lm_predictions`.
    """
    tokens, starts, lengths = corpus.tokens, corpus.segment_starts, corpus.segment_lengths
    first = corpus.document_starts[order[position]]
    count = corpus.document_lengths[order[position]]
    max_num_tokens = options.max_seq_length - 3
    target = max_num_tokens
    # Drawn once per document and dupe, even when it comes out above short_seq_prob.
    if rng.random() < options.short_seq_prob:
        target = random_draws.randint(rng, 2, max_num_tokens)
    random_value = rng.random
    cls_id, sep_id = vocab.cls_id, vocab.sep_id
    chunk_begin = chunk_size = current_length = 0
    i = 0
    while i < count:
        if not chunk_size:
            chunk_begin = first + i
        chunk_size += 1
        current_length += lengths[first + i]
        if i == count - 1 or current_length >= target:
            a_end = 1 if chunk_size == 1 else random_draws.randint(rng, 1, chunk_size - 1)
            a_start = starts[chunk_begin]
            last_a = chunk_begin + a_end - 1
            a_len = starts[last_a] + lengths[last_a] - a_start
            if chunk_size == 1 or random_value() < 0.5:
                is_random = True
                target_b_length = target - a_len
                for _ in range(10):
                    other = random_draws.randint(rng, 0, len(order) - 1)
                    if other != position:
                        break
                other_first = corpus.document_starts[order[other]]
                other_count = corpus.document_lengths[order[other]]
                random_start = other_first + random_draws.randint(rng, 0, other_count - 1)
                b_start, b_len = starts[random_start], 0
                for segment in range(random_start, other_first + other_count):
                    b_len += lengths[segment]
                    if b_len >= target_b_length:
                        break
                # The unused segments of the chunk start the next one.
                i -= chunk_size - a_end
            else:
                is_random = False
                last = chunk_begin + chunk_size - 1
                b_start = a_start + a_len
                b_len = starts[last] + lengths[last] - b_start
            # Truncate the longer side (B on ties) at a random end, one token at a time.
            while a_len + b_len > max_num_tokens:
                if a_len > b_len:
                    if random_value() < 0.5:
                        a_start += 1
                    a_len -= 1
                else:
                    if random_value() < 0.5:
                        b_start += 1
                    b_len -= 1
            instance = [cls_id, *tokens[a_start : a_start + a_len], sep_id]
            instance += tokens[b_start : b_start + b_len]
            instance.append(sep_id)
            positions, replacements = masker(
                instance,
                options.masked_lm_prob,
                options.max_predictions_per_seq,
                vocab,
                rng,
                options.do_whole_word_mask,
            )
            store.add(a_start, a_len, b_start, b_len, is_random, instance, positions, replacements)
            chunk_size = current_length = 0
        i += 1


def create_instances(corpus, options, vocab, rng, masker=create_masked_lm_predictions, store=None):
    """Makes all instances in the original's order: documents shuffled, then every dupe.

    Args:
      corpus: The `Corpus` (documents in reading order).
      options: `PretrainingOptions`.
      vocab: `Vocabulary`.
      rng: The `random.Random` to draw from.
      masker: See `add_document_instances`.
      store: An empty `InstanceStore` (or subclass) to fill; a new one by default.

    Returns:
      (store, order): the `InstanceStore` and the final (shuffled) order of its instances.
    """
    order = list(range(corpus.num_documents))
    random_draws.shuffle(rng, order)
    store = InstanceStore() if store is None else store
    for _ in range(options.dupe_factor):
        for position in range(len(order)):
            add_document_instances(corpus, order, position, options, vocab, rng, store, masker)
    instance_order = list(range(len(store)))
    random_draws.shuffle(rng, instance_order)
    return store, instance_order


def encode_instance(corpus, store, index, vocab, encoder):
    """Returns (serialised example, input_ids, positions, label_ids) of one stored instance."""
    tokens = corpus.tokens
    a_start, a_len = store.a_start[index], store.a_len[index]
    b_start, b_len = store.b_start[index], store.b_len[index]
    input_ids = [vocab.cls_id, *tokens[a_start : a_start + a_len], vocab.sep_id]
    input_ids += tokens[b_start : b_start + b_len]
    input_ids.append(vocab.sep_id)
    begin = store.mask_end[index - 1] if index else 0
    end = store.mask_end[index]
    positions = store.mask_positions[begin:end].tolist()
    label_ids = [input_ids[p] for p in positions]
    for position, replacement in zip(positions, store.mask_tokens[begin:end], strict=True):
        input_ids[position] = replacement
    record = encoder.encode(input_ids, a_len, positions, label_ids, store.random_next[index])
    return record, input_ids, positions, label_ids


def example_log_lines(vocab, options, input_ids, len_a, positions, label_ids, is_random_next):
    """Returns the original's log lines for one written example (`*** Example ***` first)."""
    seq, preds = options.max_seq_length, options.max_predictions_per_seq
    pad, pad_masks = seq - len(input_ids), preds - len(positions)
    segment_ids = [0] * (len_a + 2) + [1] * (len(input_ids) - len_a - 2) + [0] * pad
    features = (
        ("input_ids", input_ids + [0] * pad),
        ("input_mask", [1] * len(input_ids) + [0] * pad),
        ("segment_ids", segment_ids),
        ("masked_lm_positions", positions + [0] * pad_masks),
        ("masked_lm_ids", label_ids + [0] * pad_masks),
        ("masked_lm_weights", [1.0] * len(positions) + [0.0] * pad_masks),
        ("next_sentence_labels", [1 if is_random_next else 0]),
    )
    tokens = " ".join(vocab.id_to_token[i] for i in input_ids)
    lines = ["*** Example ***", f"tokens: {tokens}"]
    lines += [f"{name}: {' '.join(str(v) for v in values)}" for name, values in features]
    return lines
