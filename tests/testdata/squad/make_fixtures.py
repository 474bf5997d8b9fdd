"""Writes the SQuAD fixtures of this folder: python tests/testdata/squad/make_fixtures.py

Answer offsets are computed from the texts, so edit the texts here rather than the JSON files.
"""

import json
import os

OUT = os.path.dirname(os.path.abspath(__file__))

SMITH = (
    "The leader was John Smith (1895-1943). He founded the Japanese electronics industry, "
    "which is the largest in the world. Steve Smith's company later moved to Z\u00fcrich."
)
CAFE = (
    "  \n\tCaf\u00e9 M\u00fcller opened in S\u00e3o Paulo in 1998.\u202fThe na\u00efve owner, "
    "Jos\u00e9, served cr\u00e8me br\u00fbl\u00e9e and \u6771\u4eac ramen \U0001f35c to "
    "10\u202fkm of fans; critics called it a Re\u0301sume\u0301 of taste. "
    "It closed on 5\u00a0May 2003."
)
RIVER = (
    "The Velden River rises in the Harrow Hills at an altitude of 1,204 metres and flows north "
    "for about 310 kilometres before it joins the sea at Port Alden. In its upper course the "
    "river cuts a narrow gorge through limestone, where the old mill of Brack still stands. "
    "The first bridge over the gorge was built in 1742 by the engineer Martha Quill, whose "
    "design used a single stone arch. Below the gorge the valley widens into farmland known "
    "for barley, apples and sheep. Three tributaries, the Sallow, the Eme and the Tarn, join "
    "the river in its middle course, doubling its flow in spring. A canal opened in 1811 "
    "linked the middle river to the coal fields of Denby, and barges carried coal downstream "
    "until the railway arrived in 1867. The town of Wexcombe grew at the point where the canal "
    "met the river, and its market hall, rebuilt after a fire in 1903, is the largest in the "
    "county. Floods in 1953 destroyed most of the lower embankments, and new flood walls were "
    "finished in 1961. In the lower course the river meanders across salt marshes that shelter "
    "thousands of wading birds every winter. The estuary at Port Alden was dredged in 1922 so "
    "that larger ships could reach the quays, and the port now handles mainly timber and grain."
)


def find(context, text, occurrence=0):
    start = -1
    for _ in range(occurrence + 1):
        start = context.index(text, start + 1)
    return start


def ans(context, text, occurrence=0, start=None):
    return {
        "answer_start": find(context, text, occurrence) if start is None else start,
        "text": text,
    }


# (id, question, answer text, occurrence or explicit start); None answer = impossible.
QUESTIONS = {
    SMITH: [
        ("smith-born", "What year was John Smith born?", "1895", 0, None),
        ("japan", "What country is the top exporter of electronics?", "Japan", 0, None),
        ("steve", "Whose company moved?", "Steve Smith", 0, None),
        ("zurich", "Where did the company move to?", "Z\u00fcrich", 0, None),
    ],
    CAFE: [
        ("owner", "Who owned the caf\u00e9?", "Jos\u00e9", 0, None),
        ("dessert", "Which dessert was served?", "cr\u00e8me br\u00fbl\u00e9e", 0, None),
        ("distance", "How far did the fans come from?", "10\u202fkm", 0, None),
        # The offset points at "1998." while the text says 1999: skipped for training.
        ("opened-typo", "When did the caf\u00e9 open?", "1999", None, find(CAFE, "1998")),
        # Starts on the space before the city.
        (
            "city",
            "In which city was the caf\u00e9?",
            " S\u00e3o Paulo",
            None,
            find(CAFE, "S\u00e3o") - 1,
        ),
        ("closed", "In what year did the caf\u00e9 close?", "2003", 0, None),
        ("critics", "What did critics call it?", "Re\u0301sume\u0301 of taste", 0, None),
    ],
    RIVER: [
        ("source", "In which hills does the Velden River rise?", "Harrow Hills", 0, None),
        (
            "bridge-engineer",
            "Who built the first bridge over the gorge of the Velden River "
            "in the eighteenth century using a single stone arch design?",
            "Martha Quill",
            0,
            None,
        ),
        ("canal", "When did the canal open?", "1811", 0, None),
        ("market", "When was the market hall rebuilt?", "1903", 0, None),
        ("goods", "What does the port handle?", "timber and grain", 0, None),
        ("flow", "How long is the river?", "about 310 kilometres", 0, None),
    ],
}
IMPOSSIBLE = {
    SMITH: [("smith-retired", "What year did John Smith retire?", "1943")],
    CAFE: [("cafe-reopened", "When did the caf\u00e9 reopen?", "2003")],
    RIVER: [
        ("river-dam", "When was the dam on the Velden built?", "1961"),
        ("river-tunnel", "Who built the tunnel under the estuary?", "Martha Quill"),
    ],
}
TITLES = {SMITH: "John_Smith", CAFE: "Caf\u00e9_M\u00fcller", RIVER: "Velden_River"}
ARTICLES = [[SMITH, CAFE], [RIVER]]


def answer_of(context, text, occurrence, start):
    return ans(context, text, occurrence or 0, start)


def dev_answers(context, text, occurrence, start):
    # Dev sets list several crowd answers; the reader ignores them but must accept them.
    first = answer_of(context, text, occurrence, start)
    return [first, dict(first), {"answer_start": first["answer_start"], "text": text.strip()}]


def build(version2, training):
    data = []
    for contexts in ARTICLES:
        paragraphs = []
        for context in contexts:
            qas = []
            for qid, question, text, occurrence, start in QUESTIONS[context]:
                if training:
                    answers = [answer_of(context, text, occurrence, start)]
                else:
                    answers = dev_answers(context, text, occurrence, start)
                qa = {"answers": answers, "question": question, "id": qid}
                if version2:
                    qa = {
                        "question": question,
                        "id": qid,
                        "answers": answers,
                        "is_impossible": False,
                    }
                qas.append(qa)
            if version2:
                for qid, question, plausible in IMPOSSIBLE[context]:
                    qas.append(
                        {
                            "plausible_answers": [ans(context, plausible)],
                            "question": question,
                            "id": qid,
                            "answers": [],
                            "is_impossible": True,
                        }
                    )
            paragraphs.append(
                {"context": context, "qas": qas}
                if not version2
                else {"qas": qas, "context": context}
            )
        data.append({"title": TITLES[contexts[0]], "paragraphs": paragraphs})
    if version2:
        return {"version": "v2.0", "data": data}
    return {"data": data, "version": "1.1"}


for name, v2, training in [
    ("train-v1.1.json", False, True),
    ("dev-v1.1.json", False, False),
    ("train-v2.0.json", True, True),
    ("dev-v2.0.json", True, False),
]:
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        json.dump(build(v2, training), f, ensure_ascii=True)
