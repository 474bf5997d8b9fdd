"""run_ner's train / eval / predict sequence on the shared Trainer."""

import collections
import dataclasses
import os
import random

import numpy as np
import tensorflow as tf
from absl import logging

from data import label_file
from data.dev_metrics import official_metric
from data.ner import labels as ner_labels
from data.ner.conll import read_conll
from data.ner.features import build_windows, word_predictions
from data.ner.metrics import entity_scores
from data.ner.predictions import write_predictions
from data.ner.records import ner_dataset, write_ner_tfrecord
from jobs import fine_tuning
from training.loop import Trainer
from training.strategy import worker_output_dir
from training.summaries import write_eval_results
from training.tasks import NerTask


@dataclasses.dataclass
class NerRun:
    """Settings of one run_ner invocation: the flags of the same names."""

    data_dir: str
    output_dir: str
    label_file: str | None
    max_seq_length: int
    doc_stride: int
    document_context: bool
    do_train: bool
    do_eval: bool
    do_predict: bool
    eval_batch_size: int
    predict_batch_size: int
    num_train_epochs: float
    warmup_proportion: float
    classifier_dropout_prob: float


def _label_list(run, train_file):
    """--label_file, else output_dir/labels.txt of an earlier run, else the training data's."""
    saved = os.path.join(run.output_dir, label_file.LABELS_FILE)
    if run.label_file:
        labels = ner_labels.read_label_file(run.label_file)
    elif tf.io.gfile.exists(saved):
        labels = ner_labels.read_label_file(saved)
    elif train_file is not None:
        labels = ner_labels.labels_from_sentences(train_file.sentences)
    else:
        raise ValueError(
            f"No label set: {saved} does not exist. Pass --label_file, or run --do_train into "
            "this --output_dir first (it saves the label set there)."
        )
    logging.info("Labels (%d): %s", len(labels), " ".join(labels))
    return labels


def _scores(conll_file, word_tags, outputs, prefix):
    """`<prefix>_*` entries: conlleval's entity scores, token accuracy and the mean loss."""
    gold = [[w.tag for w in s.words] for s in conll_file.sentences]
    predicted = [
        [word_tags[(i, j)] for j in range(len(s.words))] for i, s in enumerate(conll_file.sentences)
    ]
    results = {f"{prefix}_{k}": v for k, v in entity_scores(gold, predicted).items()}
    count = float(np.sum(outputs["label_count"]))
    if count:
        results[f"{prefix}_loss"] = float(np.sum(outputs["loss_sum"]) / count)
    return results


def run_ner(run, bert_config, tokenizer, strategy, train_config, distillation=None):
    """Trains, evaluates and predicts as requested; returns the eval results (or {}).

    Reads `train.txt`, `dev.txt` and `test.txt` in `run.data_dir`. Writes `labels.txt`,
    `train.tf_record`, the checkpoints, `eval.tf_record`, `eval_results.txt`,
    `eval_predictions.txt`, `predict.tf_record`, `test_predictions.txt` and (when test.txt
    has tags) `test_results.txt`, all in `run.output_dir`.

    Args:
        run: `NerRun`.
        bert_config: the encoder's `BertConfig`.
        tokenizer: a `FullTokenizer`.
        strategy: a `tf.distribute.Strategy`.
        train_config: `TrainConfig` (steps and warmup are derived here from the data).
        distillation: None, or a `jobs.distillation.Distillation`: the run trains a student
            of its teacher (run_distill.py).
    """
    # Every input is read and checked before training and before output_dir is created, so
    # bad data fails in seconds and leaves nothing behind.
    path_of = {name: os.path.join(run.data_dir, f"{name}.txt") for name in ("train", "dev", "test")}
    train_file = read_conll(path_of["train"], tags="required") if run.do_train else None
    dev = read_conll(path_of["dev"], tags="required") if run.do_eval else None
    test = read_conll(path_of["test"], tags="optional") if run.do_predict else None
    labels = _label_list(run, train_file)
    for conll_file in (train_file, dev):
        if conll_file is not None:
            ner_labels.check_tags_in_labels(conll_file, labels)
    data = (train_file, dev, test, labels)
    with worker_output_dir(strategy, run.output_dir) as output_dir:
        return _run(
            run, output_dir, bert_config, tokenizer, strategy, train_config, data, distillation
        )


def _run(run, output_dir, bert_config, tokenizer, strategy, train_config, data, distillation):
    train_file, dev, test, labels = data
    num_gold = len(train_file.sentences) if train_file else 0
    if distillation and train_file and distillation.transfer_files:
        first_document = train_file.sentences[-1].document + 1 if num_gold else 0
        transfer = distillation.transfer_sentences(labels, first_document)
        train_file = dataclasses.replace(train_file, sentences=train_file.sentences + transfer)
    label_map = {label: index for index, label in enumerate(labels)}
    label_file.write_label_file(os.path.join(output_dir, label_file.LABELS_FILE), labels)

    def windows_of(conll_file, title, with_labels):
        windows = build_windows(
            conll_file.sentences,
            tokenizer,
            label_map if with_labels else None,
            run.max_seq_length,
            run.doc_stride,
            run.document_context,
        )
        logging.info("***** %s: %s *****", title, conll_file.path)
        logging.info("  Num sentences = %d", len(conll_file.sentences))
        logging.info("  Num windows = %d", len(windows))
        return windows

    written = {}

    def predict(windows, name, batch_size, conll_file):
        # The dev set evaluated every --eval_every_steps steps is written once.
        if name not in written:
            written[name] = fine_tuning.write_records(output_dir, name, write_ner_tfrecord, windows)
        path = written[name]
        logging.info("  Batch size = %d", batch_size)
        counting = fine_tuning.progress_counting(
            len(windows), len(conll_file.sentences), "sentences"
        )
        with fine_tuning.reading_own_records(path):
            outputs = trainer.predict(
                lambda batching: ner_dataset(
                    path, run.max_seq_length, batch_size, False, batching=batching
                ),
                len(windows),
                **counting,
            )
        return outputs, word_predictions(windows, outputs["predictions"], labels)

    if run.do_train:
        train_config = fine_tuning.with_training_steps(
            train_config, len(train_file.sentences), run.num_train_epochs, run.warmup_proportion
        )
    task_args = (bert_config, len(labels), run.classifier_dropout_prob)
    if distillation:
        train_config = distillation.train_config(train_config)
        task = distillation.task(NerTask, *task_args)
    else:
        task = NerTask(*task_args)
    trainer = Trainer(task, strategy, train_config)
    dev_windows = []

    def dev_evaluation(final=False):
        # Made once, when first needed: after training unless evaluated during it.
        if not dev_windows:
            dev_windows.extend(windows_of(dev, "Running evaluation", True))
        outputs, word_tags = predict(dev_windows, "eval", run.eval_batch_size, dev)
        if final:
            write_predictions(os.path.join(output_dir, "eval_predictions.txt"), dev, word_tags)
        counts = collections.Counter(word_tags.values())
        return _scores(dev, word_tags, outputs, "eval"), {tag: counts[tag] for tag in labels}

    evaluation = fine_tuning.dev_evaluation(
        run, trainer, output_dir, official_metric("ner"), dev_evaluation, bert_config
    )

    if run.do_train:
        windows = windows_of(train_file, "Training data", True)
        # The file lists sentences by document; the input pipeline's small shuffle buffer would
        # leave each batch within a few documents.
        random.Random(train_config.data_seed).shuffle(windows)
        path = fine_tuning.write_records(output_dir, "train", write_ner_tfrecord, windows)
        beside = None
        if distillation:
            beside = distillation.teacher_records(
                output_dir,
                strategy,
                train_config,
                lambda batching: ner_dataset(
                    path, run.max_seq_length, run.eval_batch_size, False, batching=batching
                ),
                [int(window.words[0][1] < num_gold) for window in windows],
                run.max_seq_length,
            )
        windows = None  # training reads the file
        with fine_tuning.reading_own_records(path):
            trainer.train(
                lambda skip, batching: ner_dataset(
                    path,
                    run.max_seq_length,
                    train_config.train_batch_size,
                    True,
                    train_config.data_seed,
                    skip,
                    batching,
                    beside,
                ),
                evaluation if evaluation and evaluation.keep_best else None,
            )

    results = evaluation.final(final=True) if run.do_eval else {}

    if run.do_predict:
        windows = windows_of(test, "Running prediction", False)
        outputs, word_tags = predict(windows, "predict", run.predict_batch_size, test)
        write_predictions(os.path.join(output_dir, "test_predictions.txt"), test, word_tags)
        if test.has_tags:
            # No loss: the test windows carry no labels.
            test_results = _scores(test, word_tags, outputs, "test")
            test_results["global_step"] = trainer.step
            write_eval_results(output_dir, test_results, "test_results.txt", "Test results")
    return results
