"""A small learnable reading task written in the official SQuAD 1.1 / 2.0 json format.

Each paragraph describes one person (or `num_people`): the city and year of birth and the job,
in varying order; each question asks for one of those facts. With `unanswerable`,
some questions ask about a person the paragraph does not mention (SQuAD 2.0 `is_impossible`).
"""

import json
import random

NAMES = ["anna", "boris", "carla", "dmitri", "elena", "felix", "greta", "hugo", "irene", "jonas"]
CITIES = ["paris", "lisbon", "oslo", "vienna", "dublin", "prague", "madrid", "warsaw", "athens"]
JOBS = ["baker", "pilot", "doctor", "painter", "lawyer", "farmer", "singer", "teacher"]
# (context sentence, question): the question shares its key word (city, year, job) with the
# sentence that answers it.
FACTS = {
    "city": ("{n} was born in the city of {v} .", "in which city was {n} born ?"),
    "year": ("{n} came into the world in the year {v} .", "in what year was {n} born ?"),
    "job": ("the job of {n} is {v} .", "what is the job of {n} ?"),
}


def _paragraph(rng, index, unanswerable, num_people):
    people = rng.sample(NAMES, num_people)
    facts = []
    for name in people:
        values = {
            "city": rng.choice(CITIES),
            "year": str(rng.randint(1900, 1999)),
            "job": rng.choice(JOBS),
        }
        facts.extend((name, kind, values[kind]) for kind in FACTS)
    rng.shuffle(facts)
    context, answers = "", []
    for name, kind, value in facts:
        sentence = FACTS[kind][0].format(n=name.capitalize(), v=value)
        start = len(context) + sentence.index(value)
        answers.append((name, kind, value, start))
        context += sentence + " "
    context = context.strip()
    qas = []
    for q, (name, kind, value, start) in enumerate(rng.sample(answers, 3)):
        assert context[start : start + len(value)] == value
        qa = {
            "id": f"q{index}_{q}",
            "question": FACTS[kind][1].format(n=name),
            "answers": [{"text": value, "answer_start": start}],
        }
        if unanswerable is not None:
            qa["is_impossible"] = False
        qas.append(qa)
    if unanswerable is not None and rng.random() < unanswerable:
        absent = rng.choice([n for n in NAMES if n not in people])
        kind = rng.choice(list(FACTS))
        qas.append(
            {
                "id": f"q{index}_none",
                "question": FACTS[kind][1].format(n=absent),
                "answers": [],
                "is_impossible": True,
            }
        )
    return {"context": context, "qas": qas}


def write_squad(path, num_paragraphs, seed, unanswerable=None, num_people=1):
    """Writes a SQuAD json file; `unanswerable` (a probability) makes it SQuAD 2.0."""
    rng = random.Random(seed)
    paragraphs = [_paragraph(rng, i, unanswerable, num_people) for i in range(num_paragraphs)]
    version = "v2.0" if unanswerable is not None else "1.1"
    data = {"version": version, "data": [{"title": "people", "paragraphs": paragraphs}]}
    path.write_text(json.dumps(data))
    return data
