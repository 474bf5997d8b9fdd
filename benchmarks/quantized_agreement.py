"""How closely an int8 export answers as its float32 export, scored on a real test set
(`--task=ner`: conlleval's entity F1 on a CoNLL file; `--task=squad`: the official F1 and
exact match), both through `serving.predictor.load_predictor` in batches of `--batch`;
`--runner_predictions` adds the runner's own answers as a third row. See benchmarks/README.md
("int8 agreement").

    python -m benchmarks.quantized_agreement --task=ner --data=/tmp/ner_data/test.txt \
        --float32_export=/tmp/ner_f32 --int8_export=/tmp/ner_int8 \
        --runner_predictions=/tmp/ner_out/test_predictions.txt --json=ner_agreement.json
"""

import argparse
import json

from benchmarks import harness
from benchmarks.serving import predict_in_batches
from fileio.atomic import write_atomically


def _ner_items(path):
    from data.ner.conll import read_conll

    sentences = read_conll(path, "required").sentences
    instances = [{"text": " ".join(w.text for w in s.words)} for s in sentences]
    gold = [[w.tag for w in s.words] for s in sentences]
    return instances, gold


def _ner_scores(gold, answers):
    from data.ner.metrics import entity_scores

    scores = entity_scores(gold, answers)
    return {k: 100.0 * scores[k] for k in ("f1", "precision", "recall", "accuracy")}


def _ner_runner_answers(path, gold):
    """The predicted tags (the last column) of run_ner's prediction file."""
    from data.ner.conll import read_conll

    answers = [[w.tag for w in s.words] for s in read_conll(path, "required").sentences]
    if [len(a) for a in answers] != [len(g) for g in gold]:
        raise SystemExit(f"--runner_predictions {path}: its sentences are not --data's.")
    return answers


def _squad_items(path):
    with open(path, encoding="utf-8") as f:
        dataset = json.load(f)
    instances, ids = [], []
    for article in dataset["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                instances.append({"question": qa["question"], "context": paragraph["context"]})
                ids.append(qa["id"])
    return instances, (dataset, ids)


def _squad_scores(gold, answers):
    from data.squad.evaluation import evaluate_v1

    dataset, ids = gold
    scores = evaluate_v1(dataset["data"], dict(zip(ids, answers, strict=True)))
    return {"f1": scores["f1"], "exact_match": scores["exact_match"]}


def _squad_runner_answers(path, gold):
    with open(path, encoding="utf-8") as f:
        predictions = json.load(f)
    missing = [i for i in gold[1] if i not in predictions]
    if missing:
        raise SystemExit(f"--runner_predictions {path}: no answer for {len(missing)} questions.")
    return [predictions[i] for i in gold[1]]


TASKS = {
    "ner": (_ner_items, _ner_scores, _ner_runner_answers, lambda a: a["tags"]),
    "squad": (_squad_items, _squad_scores, _squad_runner_answers, lambda a: a["answer"]),
}


def answer_all(export_dir, instances, batch, num_threads, key):
    """(answers, seconds, precision) of one export over every instance, `batch` at a time."""
    from serving.predictor import load_predictor

    predictor = load_predictor(export_dir, num_threads=num_threads)
    answers, seconds = predict_in_batches(predictor, instances, batch)
    return [key(a) for a in answers], seconds, predictor.precision


def _share_identical(answers, reference):
    return 100.0 * sum(a == r for a, r in zip(answers, reference, strict=True)) / len(reference)


def compare(args):
    """The scores of every row and their agreement with float32, as a dict."""
    items, score, runner_answers, key = TASKS[args.task]
    instances, gold = items(args.data)
    if args.limit:
        instances = instances[: args.limit]
        gold = gold[: args.limit] if args.task == "ner" else (gold[0], gold[1][: args.limit])
    rows = {}
    for name, export_dir in (("float32", args.float32_export), ("int8", args.int8_export)):
        answers, seconds, precision = answer_all(
            export_dir, instances, args.batch, args.num_threads, key
        )
        rows[name] = {"export": export_dir, "export_precision": precision, "answers": answers}
        rows[name].update(score(gold, answers), seconds=seconds)
    if args.runner_predictions:
        answers = runner_answers(args.runner_predictions, gold)
        rows["runner"] = {"export": args.runner_predictions, "answers": answers}
        rows["runner"].update(score(gold, answers))
    for row in rows.values():
        row["identical_to_float32"] = _share_identical(row["answers"], rows["float32"]["answers"])
    return {
        "task": args.task,
        "data": args.data,
        "items": len(instances),
        "f1_gap_int8_minus_float32": rows["int8"]["f1"] - rows["float32"]["f1"],
        "rows": rows,
    }


def table(result):
    """The result as a Markdown table."""
    columns = ["f1", "precision", "recall"] if result["task"] == "ner" else ["f1", "exact_match"]
    rows = [
        [name, *(f"{row[c]:.2f}" for c in columns), f"{row['identical_to_float32']:.2f}",
         f"{row['seconds']:.1f}" if "seconds" in row else "-"]
        for name, row in result["rows"].items()
    ]  # fmt: skip
    header = ["answers", *columns, "identical to float32 (%)", "seconds"]
    gap = result["f1_gap_int8_minus_float32"]
    return (
        f"{harness.table(header, rows)}\n\n{result['items']} items; int8 - float32 F1: {gap:+.2f}"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=sorted(TASKS), required=True)
    parser.add_argument("--data", required=True, help="ner: tagged CoNLL file; squad: JSON")
    parser.add_argument("--float32_export", required=True)
    parser.add_argument("--int8_export", required=True)
    parser.add_argument("--runner_predictions", help="test_predictions.txt / predictions.json")
    parser.add_argument("--batch", type=int, default=32, help="instances per predict() call")
    parser.add_argument("--num_threads", type=int, default=None)
    parser.add_argument("--limit", type=int, default=None, help="only the first N items")
    parser.add_argument("--json", help="also write the machine, command and every score here")
    args = parser.parse_args(argv)
    result = compare(args)
    print(table(result))
    if args.json:
        for row in result["rows"].values():
            row.pop("answers")
        result.update(machine=harness.machine(), arguments=vars(args))
        write_atomically(args.json, json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
