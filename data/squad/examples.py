"""SQuAD 1.1 / 2.0 examples: questions read from the official JSON files.

`read_squad_examples` splits each context on whitespace and maps the character-based answer
annotation to those words, exactly as the original `run_squad.py`; `data.squad.features` turns
the examples into model inputs.
"""

import dataclasses
import json

from absl import logging

from data.tokenization.full_tokenizer import whitespace_tokenize
from fileio.reading import open_for_reading

FIRST_UNIQUE_ID = 1000000000
# Examples whose features are logged in full, as the original.
_NUM_LOGGED = 20
# Whitespace for splitting contexts into words. Narrower than `str.isspace` on purpose: the
# original's rule (which includes U+202F NARROW NO-BREAK SPACE) defines the words that
# answers map to and that predictions are cut from.
_CONTEXT_WHITESPACE = frozenset(" \t\r\n\u202f")


@dataclasses.dataclass
class SquadExample:
    """One question about one paragraph.

    Attributes:
        qas_id: the question's `id` in the SQuAD file.
        question_text: the question.
        doc_tokens: the context split on whitespace (see `read_squad_examples`).
        orig_answer_text: the annotated answer (training only; "" if impossible).
        start_position: index in `doc_tokens` of the answer's first word (training only;
            -1 if impossible).
        end_position: index of its last word (training only; -1 if impossible).
        is_impossible: the question has no answer in the paragraph (SQuAD 2.0 training).
    """

    qas_id: str
    question_text: str
    doc_tokens: list
    orig_answer_text: str | None = None
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False


def _load_json(input_file):
    try:
        with open_for_reading(input_file) as reader:
            return json.load(reader)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"Cannot read SQuAD file {input_file!r}: {err}") from err


def split_context(context):
    """Returns the whitespace-separated words and, per character, the index of its word.

    A whitespace character maps to the word before it (-1 before the first word).
    """
    doc_tokens = []
    char_to_word_offset = []
    after_space = True
    for char in context:
        if char in _CONTEXT_WHITESPACE:
            after_space = True
        elif after_space:
            doc_tokens.append(char)
            after_space = False
        else:
            doc_tokens[-1] += char
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def _get(mapping, key, kind, where):
    """`mapping[key]` checked for type, or a ValueError that says where the data is bad."""
    if not isinstance(mapping, dict) or key not in mapping:
        raise ValueError(f"{where}: missing the {key!r} field.")
    value = mapping[key]
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise ValueError(f"{where}: {key!r} should be of type {names}, got {value!r}.")
    return value


def _read_question(qa, words, is_training, with_negative, where):
    """Returns the `SquadExample` of one entry of "qas", or None if its answer is not found.

    `words` holds the context, its words and its character-to-word map (`split_context`).
    """
    context, doc_tokens, char_to_word_offset = words
    qid = qa.get("id") if isinstance(qa, dict) else None
    where = f"{where}, question {qid!r}"
    example = SquadExample(
        qas_id=_get(qa, "id", (str, int), where),
        question_text=_get(qa, "question", str, where),
        doc_tokens=doc_tokens,
    )
    if not is_training:
        return example
    if with_negative:
        example.is_impossible = _get(qa, "is_impossible", bool, where)
    if example.is_impossible:
        example.orig_answer_text = ""
        example.start_position = example.end_position = -1
        return example
    answers = _get(qa, "answers", list, where)
    if len(answers) != 1:
        raise ValueError(
            f"{where}: for training, each question should have exactly 1 answer; it has "
            f"{len(answers)}."
        )
    text = _get(answers[0], "text", str, where)
    offset = _get(answers[0], "answer_start", int, where)
    if not 0 <= offset < len(context) or offset + len(text) > len(context):
        raise ValueError(
            f"{where}: answer_start {offset} with an answer of {len(text)} characters does not "
            f"fit in the context of {len(context)} characters."
        )
    first = char_to_word_offset[offset]
    last = char_to_word_offset[offset + len(text) - 1]
    # Keep only answers that the words reproduce; a miss is usually an offset broken by odd
    # Unicode, and the question is dropped rather than trained on a wrong span.
    actual_text = " ".join(doc_tokens[first : last + 1])
    cleaned_answer_text = " ".join(whitespace_tokenize(text))
    if cleaned_answer_text not in actual_text:
        # The original's warning, then which question is skipped.
        logging.warning(
            "Could not find answer: '%s' vs. '%s' (%s); the question is skipped.",
            actual_text,
            cleaned_answer_text,
            where,
        )
        return None
    example.orig_answer_text = text
    example.start_position, example.end_position = first, last
    return example


def read_squad_examples(input_file, is_training, version_2_with_negative=False):
    """Reads a SQuAD JSON file (`{"data": [{"paragraphs": [{"context", "qas"}]}]}`).

    Contexts are split into words on space, tab, CR, LF and U+202F only. For training, each
    question must have exactly one answer (or, with `version_2_with_negative`, be marked
    `is_impossible`); the answer's characters are mapped to words, and a question whose answer
    text is not found in those words is logged ("Could not find answer", with the file and the
    question id) and skipped. The
    examples keep the file's order (shuffling for training is the caller's choice).

    Args:
        input_file: path of the JSON file (a local path or any `tf.io.gfile` URL).
        is_training: read the answers and positions.
        version_2_with_negative: SQuAD 2.0: read each question's `is_impossible` (training).

    Returns:
        list of `SquadExample`.

    Raises:
        ValueError: if the file cannot be read or parsed, or its structure is not SQuAD's
            (the message names the file and the question id).
    """
    dataset = _load_json(input_file)
    source = f"SQuAD file {input_file}"
    with_negative = version_2_with_negative
    examples = []
    for i, entry in enumerate(_get(dataset, "data", list, source)):
        where = f"{source}, data[{i}]"
        for j, paragraph in enumerate(_get(entry, "paragraphs", list, where)):
            where_paragraph = f"{where}.paragraphs[{j}]"
            context = _get(paragraph, "context", str, where_paragraph)
            words = (context, *split_context(context))
            for qa in _get(paragraph, "qas", list, where_paragraph):
                example = _read_question(qa, words, is_training, with_negative, source)
                if example is not None:
                    examples.append(example)
    return examples
