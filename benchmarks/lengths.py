"""Batches cut to length against full-length batches, for every runner's training,
prediction and extraction paths; see benchmarks/README.md ("Batches cut to length").

    pip download --no-deps gensim==4.4.0 -d /tmp/gensim
    python -m benchmarks.lengths --wheel /tmp/gensim/gensim-4.4.0-*.whl --task classifier \
        --config mini --group --rounds 3 --steps 10 --warmup 5
    python -m benchmarks.lengths --task ner --config mini --modes predict --rounds 3
"""

import dataclasses
import json
import os
import tempfile

from benchmarks import harness
from benchmarks.common import (
    CONFIGS,
    bert_config,
    fine_tuning_task,
    random_encoder_checkpoint,
    records_reader,
    timed_train,
    timed_trainer,
)
from benchmarks.weights import minilm_vocab
from fileio.atomic import atomic_output, open_atomically

PADDINGS = ("pad", "cut", "unpacked", "group", "micro")


def _tokenizer():
    from data.tokenization.full_tokenizer import FullTokenizer

    return FullTokenizer(minilm_vocab(), do_lower_case=True)


def _paths(args):
    """The records and extract_features' input, named by source, count and length so that the
    tasks and settings sharing a work dir never read each other's."""
    source = os.path.join(args.work_dir, "conll" if args.task == "ner" else "wiki")
    return f"{source}_{args.examples}_{args.seq}.tf_record", f"{source}_{args.examples}.txt"


def _write_records(args, records, text):
    """Writes the task's records; returns the length of every example in word pieces."""
    tokenizer = _tokenizer()
    if args.task == "ner":
        from data.ner import labels as ner_labels
        from data.ner.conll import read_conll
        from data.ner.features import build_windows
        from data.ner.records import write_ner_tfrecord

        sentences = []
        for name in ("train", "dev", "test"):
            path = os.path.join(harness.REPO, "tests", "testdata", "conll2003", f"{name}.txt")
            sentences += read_conll(path, "required").sentences
        sentences = (sentences * (1 + args.examples // len(sentences)))[: args.examples]
        labels = {label: i for i, label in enumerate(ner_labels.labels_from_sentences(sentences))}
        windows = build_windows(sentences, tokenizer, labels, args.seq, 64, False)
        write_ner_tfrecord(windows, records)
        return [sum(w.input_mask) for w in windows]
    from benchmarks.corpus import corpus_lines
    from data.glue.features import convert_examples_to_features
    from data.glue.processor_base import InputExample
    from data.glue.records import write_classifier_tfrecord

    if not (args.wheel or args.corpus):
        raise SystemExit(f"{records} is missing: give --wheel or --corpus to write it.")
    texts = corpus_lines(args, args.examples)
    with open(text, "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    examples = [InputExample(f"x-{i}", t, None, str(i % 2)) for i, t in enumerate(texts)]
    features = convert_examples_to_features(examples, ["0", "1"], args.seq, tokenizer)
    write_classifier_tfrecord(features, records)
    return [sum(f.input_mask) for f in features]


def _lengths_once(args):
    """The length distribution of the task's records, which are written first if missing."""
    import numpy as np

    records, text = _paths(args)
    if not os.path.exists(records):
        os.makedirs(args.work_dir, exist_ok=True)
        with atomic_output(records) as temp:
            n = np.array(_write_records(args, temp, text))
            stats = dict(examples=len(n), max=int(n.max()), mean=float(n.mean()))
            stats.update(median=float(np.median(n)), p90=float(np.percentile(n, 90)))
            stats.update(at_max_seq_length=float((n >= args.seq).mean()))
            # Before the records take their name: whoever finds them finds their statistics.
            with open_atomically(records + ".json") as f:
                json.dump(stats, f)
    with open(records + ".json", encoding="utf-8") as f:
        return json.load(f)


def _trainer(args, config, num_steps, padding):
    trainer = timed_trainer(
        fine_tuning_task(args.task, config), args.seed, train_batch_size=args.batch,
        iterations_per_loop=args.iterations_per_loop, use_xla=args.xla,
        pad_to_max_seq_length=padding == "pad", group_by_length=padding == "group",
        num_accumulation_steps=args.micro if padding == "micro" else 1,
        num_train_steps=num_steps, num_warmup_steps=1,
    )  # fmt: skip
    if padding == "unpacked":
        # `train` and `predict` build their input from the plan, so this still takes effect.
        trainer.plan = dataclasses.replace(trainer.plan, real_tokens_only=False)
    return trainer


def _reader(args, batch, training):
    return records_reader(args.task, _paths(args)[0], args.seq, batch, training, args.seed)


def run_train(args, config, padding):
    trainer = _trainer(args, config, args.warmup + args.steps, padding)
    marks = []
    rate, cpu_rate = timed_train(
        trainer, _reader(args, args.batch, True), args.warmup, args.batch, True, marks
    )
    timed = [m for m in marks if m[0] >= args.warmup]
    calls = [round(b[1] - a[1], 2) for a, b in zip(timed, timed[1:], strict=False)]
    return {"examples_per_s": rate, "examples_per_cpu_s": cpu_rate, "timed_call_seconds": calls}


def run_predict(args, config, padding):
    trainer = _trainer(args, config, 1, padding)
    read = _reader(args, args.predict_batch, False)
    # A first pass compiles every bucket's shape; the second is timed.
    trainer.predict(lambda b: read(0, b))
    clock = harness.Clock()
    outputs = trainer.predict(lambda b: read(0, b))
    return clock.rates(len(next(iter(outputs.values()))))


def run_extract(args, config, padding):
    from jobs.extraction_run import ExtractionRun, extract_features
    from training.strategy import create_strategy

    prefix = random_encoder_checkpoint(args.work_dir, args.config, config, args.seed)
    output = os.path.join(tempfile.mkdtemp(prefix="lengths_benchmark_"), "out.jsonl")
    run = ExtractionRun(
        input_file=_paths(args)[1], output_file=output, init_checkpoint=prefix, layers=[-1],
        max_seq_length=args.seq, batch_size=args.predict_batch, jit_compile=args.xla,
        pad_to_max_seq_length=padding == "pad",
    )  # fmt: skip
    strategy = create_strategy("one_device")
    clock = harness.Clock()
    return clock.rates(extract_features(run, config, _tokenizer(), strategy))


def measure(args, peer):
    lengths = _lengths_once(args)
    args.xla = peer.options["xla"]
    run = {"train": run_train, "predict": run_predict, "extract": run_extract}[peer.options["mode"]]
    return {**run(args, bert_config(args.config), peer.options["padding"]), "lengths": lengths}


def _runs(args, mode, padding):
    if padding in ("pad", "cut"):
        return True
    if padding == "unpacked":
        return args.unpacked
    return mode == "train" and (args.group if padding == "group" else args.micro > 1)


def peers(args):
    modes = ["extract"] if args.task == "extract" else args.modes.split(",")
    chosen = []
    for mode in modes:
        for xla in [False] if args.no_xla else [True] if args.only_xla else [False, True]:
            prefix = mode + ("_xla" if xla else "")
            options = [
                dict(mode=mode, xla=xla, padding=p) for p in PADDINGS if _runs(args, mode, p)
            ]
            chosen += [
                harness.Peer(f"{prefix}_{o['padding']}", f"{prefix}_pad", options=o)
                for o in options
            ]
    return chosen


def add_arguments(parser):
    add = parser.add_argument
    add("--task", choices=["classifier", "ner", "extract"], default="classifier")
    add("--modes", default="predict,train", help="predict and/or train (not for extract).")
    add("--group", action="store_true", help="Also train with --group_by_length.")
    add("--unpacked", action="store_true", help="Also the cut with every token through.")
    add("--micro", type=int, default=1, help="Micro-batches per update of `micro` (run if > 1).")
    add("--config", choices=list(CONFIGS), default="mini")
    add("--wheel", help="gensim-4.4.0 wheel (the Wikipedia excerpt).")
    add("--corpus", help="A prepared text file, one sentence per line, instead of --wheel.")
    add("--work_dir", default=os.path.join(tempfile.gettempdir(), "lengths_benchmark"))
    add("--examples", type=int, default=2048)
    add("--seq", type=int, default=128)
    add("--batch", type=int, default=32, help="Training batch (original: 32).")
    add("--predict_batch", type=int, default=32)
    add("--steps", type=int, default=20)
    add("--warmup", type=int, default=5, help="A multiple of iterations_per_loop.")
    add("--iterations_per_loop", type=int, default=5)
    add("--no_xla", action="store_true", help="Leave out the XLA peers.")
    add("--only_xla", action="store_true", help="Only the XLA peers.")
    add("--seed", type=int, default=1)


METRICS = [harness.rate(), harness.rate("examples_per_cpu_s", "examples/CPU-s")]

if __name__ == "__main__":
    harness.main(__spec__.name)
