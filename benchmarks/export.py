"""Raw text to probabilities: the exported text-in classifier (`export_*`) against
run_classifier's prediction path (`runner_*`), batches padded (`pad`) or cut to their longest
(`cut`), on a random classifier of `--config`; see benchmarks/README.md ("Export").

    python -m benchmarks.export --config mini --rounds 5
"""

import dataclasses
import multiprocessing
import os
import random
import tempfile

from benchmarks import harness
from benchmarks.common import CONFIGS, bert_config, fine_tuning_task, records_reader, timed_trainer
from benchmarks.weights import minilm_vocab


def sentences(n, seed=0):
    """SST-2-length text: 8 to 30 frequent whole words (ids 2000-7999 of the uncased vocab)
    with a capital, a comma and a full stop, about 25 word pieces on average."""
    with open(minilm_vocab(), encoding="utf-8") as f:
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
    """Writes the random checkpoint, bert_config.json and both exports."""
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
        task="classifier", task_name="SST-2", checkpoint=prefix, vocab_file=minilm_vocab(),
        do_lower_case=True, max_seq_length=args.seq, export_dir=f"{args.work_dir}/export_cut",
    )  # fmt: skip
    export_model(run, config)
    # Written last: its presence says the preparation is complete.
    full = os.path.join(args.work_dir, "export_pad")
    export_model(dataclasses.replace(run, export_dir=full, pad_to_max_seq_length=True), config)


def run_export(args, texts, padding):
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the in-graph tokenizer's ops)

    path = os.path.join(args.work_dir, f"export_{padding}")
    serve = tf.saved_model.load(path).signatures["serving_default"]
    batches = [texts[i : i + args.batch] for i in range(0, len(texts), args.batch)]
    for batch in batches[: args.warmup]:
        serve(text_a=tf.constant(batch))
    clock = harness.Clock()
    out = [serve(text_a=tf.constant(batch))["probabilities"].numpy() for batch in batches]
    return clock.rates(len(np.concatenate(out)))


def run_runner(args, texts, padding):
    from data.glue.features import convert_examples_to_features
    from data.glue.processor_base import InputExample
    from data.glue.records import write_classifier_tfrecord
    from data.tokenization.full_tokenizer import FullTokenizer
    from modeling.config import BertConfig

    config = BertConfig.from_json_file(os.path.join(args.work_dir, "bert_config.json"))
    out_dir = tempfile.mkdtemp(prefix="export_benchmark_runner_")
    trainer = timed_trainer(
        fine_tuning_task("classifier", config), args.seed, output_dir=out_dir,
        num_train_steps=None, num_warmup_steps=None, train_batch_size=args.batch,
        init_checkpoint=f"{args.work_dir}/ckpt/model.ckpt", pad_to_max_seq_length=padding == "pad",
    )  # fmt: skip
    tokenizer = FullTokenizer(minilm_vocab(), do_lower_case=True)

    def predict(examples, name):
        features = convert_examples_to_features(examples, ["0", "1"], args.seq, tokenizer)
        path = os.path.join(out_dir, f"{name}.tf_record")
        write_classifier_tfrecord(features, path)
        read = records_reader("classifier", path, args.seq, args.batch, False, args.seed)
        return trainer.predict(lambda batching: read(0, batching))["predictions"]

    examples = [InputExample(f"test-{i}", t, None, "0") for i, t in enumerate(texts)]
    predict(examples[: args.warmup * args.batch], "warmup")
    clock = harness.Clock()
    return clock.rates(len(predict(examples, "predict")))


def measure(args, peer):
    default = os.path.join(tempfile.gettempdir(), f"export_benchmark_{args.config}_{args.seq}")
    args.work_dir = args.work_dir or default
    if not os.path.exists(os.path.join(args.work_dir, "export_pad")):
        os.makedirs(args.work_dir, exist_ok=True)
        # In a process of its own, so the measuring process keeps none of the export's
        # graphs, memory or threads.
        process = multiprocessing.get_context("spawn").Process(target=prepare, args=(args,))
        process.start()
        process.join()
        if process.exitcode:
            raise RuntimeError(f"preparing {args.work_dir} failed (exit code {process.exitcode})")
    path, padding = peer.name.split("_")
    run = run_export if path == "export" else run_runner
    return run(args, sentences(args.examples, args.seed), padding)


def peers(args):
    # `<path>_<batches>`, each path's figures against the runner's with the same batches.
    return [
        harness.Peer(f"{path}_{padding}", f"runner_{padding}")
        for padding in ("pad", "cut")
        for path in ("runner", "export")
    ]


def add_arguments(parser):
    parser.add_argument("--config", choices=list(CONFIGS), default="mini")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--examples", type=int, default=2048)
    parser.add_argument("--warmup", type=int, default=2, help="Batches run before timing.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--work_dir",
        help="Checkpoint and exports (default: export_benchmark_<config>_<seq> in /tmp).",
    )


METRICS = [harness.rate(), harness.rate("examples_per_cpu_s", "examples/CPU-s")]

if __name__ == "__main__":
    harness.main(__spec__.name)
