"""run_classifier's train / eval / predict sequence on the shared Trainer."""

import dataclasses
import os

import numpy as np
from absl import logging

from data.classification import eval_results as own_results
from data.classification.class_weights import class_weights_for
from data.classification.eval_results import classifier_eval_results, problem_type_of
from data.classification.predictions import PREDICTIONS_FILE, write_prediction_file
from data.classification.report import write_report_files
from data.classification.thresholds import (
    THRESHOLDS_FILE,
    saved_thresholds,
    write_thresholds_file,
)
from data.dev_metrics import official_metric
from data.glue.features import convert_examples_to_features, label_id_of
from data.glue.long_inputs import aggregate_windows, convert_long_examples
from data.glue.processor_base import PaddingInputExample
from data.glue.processors import is_glue_processor
from data.glue.records import classifier_dataset, write_classifier_tfrecord
from data.glue.submission import write_leaderboard_file, write_test_results
from data.label_file import LABELS_FILE, write_label_file
from data.own_data.labels import PROBLEM_FILE, earlier_run_folders, write_problem_file
from jobs import fine_tuning
from training.dev_eval import predicted_class_counts
from training.loop import Trainer
from training.strategy import worker_output_dir
from training.tasks import ClassifierTask


@dataclasses.dataclass
class ClassifierRun:
    """Settings of one run_classifier invocation: the flags of the same names."""

    task_name: str
    data_dir: str
    output_dir: str
    max_seq_length: int
    do_train: bool
    do_eval: bool
    do_predict: bool
    eval_batch_size: int
    predict_batch_size: int
    num_train_epochs: float
    warmup_proportion: float
    classifier_dropout_prob: float
    # Inputs longer than max_seq_length (data.glue.long_inputs): the original's truncation,
    # head and tail, or windows aggregated per example.
    long_inputs: str = "truncate"
    head_tokens: int | None = None
    doc_stride: int | None = None
    window_aggregation: str = "mean"
    # --class_weights: None, "balanced" or one number per label; --decision_threshold (multi-
    # label): "global", "per_label" or a probability; labels with fewer positive dev examples
    # than --min_label_positives keep the global threshold.
    class_weights: str | None = None
    decision_threshold: str = "global"
    min_label_positives: int = 5


def _eval_metrics(run, processor, outputs, batch_size, prefix="", thresholds=None):
    """eval_results entries of per-example outputs (`classifier_eval_results`)."""
    return classifier_eval_results(
        processor, run.task_name, outputs, batch_size, prefix, thresholds
    )


def _report_files(output_dir, processor, outputs, thresholds=None):
    """The report files of a final dev evaluation's real examples (`write_report_files`)."""
    real = outputs["real"] > 0
    write_report_files(
        output_dir,
        problem_type_of(processor),
        processor.get_labels(),
        outputs["predictions"][real],
        outputs["labels"][real],
        thresholds,
    )


def _class_weights(run, processor, train_examples, labels):
    """The loss weights `[C]` of --class_weights (`class_weights_for`), or None."""
    if processor.is_regression:
        return None
    ids = [label_id_of(e, labels, False) for e in train_examples]
    multi = problem_type_of(processor) == own_results.MULTI_LABEL
    weights = class_weights_for(run.class_weights, labels, ids, multi)
    if weights is not None:
        shown = dict(zip(labels, np.round(weights, 4).tolist(), strict=True))
        logging.info("Class weights: %s", shown)
    return weights


def classifier_features(run, examples, labels, tokenizer, processor):
    """The records of `examples` as `run.long_inputs` cuts them.

    Returns:
        (features, example_of_feature): one record per example except with windows.
    """
    if run.long_inputs == "truncate":
        features = convert_examples_to_features(
            examples, labels, run.max_seq_length, tokenizer, processor.is_regression
        )
        return features, list(range(len(examples)))
    return convert_long_examples(
        examples,
        labels,
        run.max_seq_length,
        tokenizer,
        processor.is_regression,
        run.long_inputs,
        run.head_tokens,
        run.doc_stride,
    )


def per_example_outputs(outputs, owners, aggregation, processor):
    """The outputs of each example from those of its windows (`aggregate_windows`): its
    aggregated probabilities (or score), label, and loss under them."""
    real = outputs["real"] > 0
    examples, owner = np.unique(np.asarray(owners)[real], return_inverse=True)
    predictions = aggregate_windows(
        outputs["logits"][real], owner, len(examples), aggregation, processor.is_regression
    )
    first = np.searchsorted(owner, np.arange(len(examples)))
    labels = outputs["labels"][real][first]
    if processor.is_regression:
        losses = np.square(predictions - labels)
    else:
        chosen = predictions[np.arange(len(labels)), labels.astype(np.int64)]
        losses = -np.log(np.maximum(chosen, np.finfo(np.float32).tiny))
    return {
        "predictions": predictions,
        "per_example_loss": losses.astype(np.float32),
        "labels": labels,
        "real": np.ones(len(examples), np.int32),
    }


def run_classifier(
    run, bert_config, processor, tokenizer, strategy, train_config, distillation=None
):
    """Trains, evaluates and predicts as requested; returns the eval results (or {}).

    Writes `train.tf_record`, `eval.tf_record` and `predict.tf_record` (plus one per extra
    dev/test set), the checkpoints, `eval_results.txt`, `test_results.tsv` and the GLUE
    leaderboard file(s) of the task, all in `run.output_dir`.

    Args:
        run: `ClassifierRun`.
        bert_config: the encoder's `BertConfig`.
        processor: the task's `data.glue.processor_base.DataProcessor`.
        tokenizer: a `FullTokenizer`.
        strategy: a `tf.distribute.Strategy`.
        train_config: `TrainConfig` (steps and warmup are derived here from the data).
        distillation: None, or a `jobs.distillation.Distillation`: the run trains a student
            of its teacher (run_distill.py).
    """
    # Every set is read (and an empty one refused) before output_dir is created.
    sets = _read_sets(run, processor)
    with worker_output_dir(strategy, run.output_dir) as output_dir:
        return _run(
            run,
            output_dir,
            bert_config,
            processor,
            tokenizer,
            strategy,
            train_config,
            sets,
            distillation,
        )


def _read_sets(run, processor):
    """The examples of the requested sets: (train list, dev sets dict, test sets dict).

    The processors refuse a set file without examples, naming it.
    """
    train = processor.get_train_examples(run.data_dir) if run.do_train else []
    dev_sets = processor.get_dev_sets(run.data_dir) if run.do_eval else {}
    test_sets = processor.get_test_sets(run.data_dir) if run.do_predict else {}
    return train, dev_sets, test_sets


def _run(
    run, output_dir, bert_config, processor, tokenizer, strategy, train_config, sets, distillation
):
    train_examples, dev_sets, test_sets = sets
    labels = processor.get_labels()
    problem = problem_type_of(processor)
    multi_labels = len(labels) if problem == own_results.MULTI_LABEL else 0
    weights = _class_weights(run, processor, train_examples if run.do_train else [], labels)
    num_gold = len(train_examples)
    if distillation and run.do_train:
        transfer = distillation.transfer_examples(
            labels, bool(multi_labels), processor.is_regression, processor
        )
        train_examples = train_examples + transfer
    how = own_results.parse_decision_threshold(run.decision_threshold)
    # Multi-label decision thresholds: chosen at each dev evaluation, used for prediction.
    chosen = {}

    def write(examples, name):
        """Writes the records of `examples`; returns (path, the example of each record)."""
        features, owners = classifier_features(run, examples, labels, tokenizer, processor)
        path = fine_tuning.write_records(
            output_dir,
            name,
            write_classifier_tfrecord,
            features,
            is_regression=processor.is_regression,
        )
        return path, owners

    def dataset(path, batch_size, is_training, skip=0, batching=None, beside=None):
        return classifier_dataset(
            path,
            run.max_seq_length,
            processor.is_regression,
            batch_size,
            is_training,
            seed=train_config.data_seed,
            skip_batches=skip,
            batching=batching,
            multi_labels=multi_labels,
            beside=beside,
        )

    written = {}

    def predict(examples, name, title, batch_size):
        # A dev set evaluated every --eval_every_steps steps is written once.
        if name not in written:
            written[name] = write(examples, name)
        path, owners = written[name]
        padding = sum(isinstance(e, PaddingInputExample) for e in examples)
        # The fixed-shape path fills the last batch, as the original does on a TPU: with
        # windows, the last batch of windows, so the filling is counted with them.
        filling = -len(owners) % batch_size if trainer.plan.whole_inference_batches else 0
        windowed = len(owners) != len(examples)
        examples_filling = 0 if windowed else filling
        fine_tuning.log_inference_set(
            title, len(examples) + examples_filling, padding + examples_filling, batch_size
        )
        if windowed:
            logging.info(
                "  Num windows = %d (%d actual, %d padding)",
                len(owners) + filling,
                len(owners),
                filling,
            )
        counting = fine_tuning.progress_counting(len(owners), len(examples))
        with fine_tuning.reading_own_records(path):
            outputs = trainer.predict(
                lambda batching: dataset(path, batch_size, False, 0, batching),
                len(owners),
                **counting,
            )
        if len(owners) == len(examples):
            return outputs
        return per_example_outputs(outputs, owners, run.window_aggregation, processor)

    if run.do_train:
        # Every window is a training example with its example's label.
        path, owners = write(train_examples, "train")
    # What the model predicts and the class order, for its later evaluation, prediction,
    # export, serving and conversion (data.own_data.labels); after the training records, the
    # original's first output.
    write_problem_file(os.path.join(output_dir, PROBLEM_FILE), problem, processor.has_text_b)
    if problem != own_results.REGRESSION:
        write_label_file(os.path.join(output_dir, LABELS_FILE), labels)
    if run.do_train:
        train_config = fine_tuning.with_training_steps(
            train_config, len(owners), run.num_train_epochs, run.warmup_proportion
        )
    task_args = (bert_config, len(labels), processor.is_regression, run.classifier_dropout_prob)
    task_options = {"multi_label": bool(multi_labels), "class_weights": weights}
    if distillation:
        train_config = distillation.train_config(train_config)
        task = distillation.task(ClassifierTask, *task_args, **task_options)
    else:
        task = ClassifierTask(*task_args, **task_options)
    trainer = Trainer(task, strategy, train_config)

    def dev_evaluation(final=False):
        results, counts = {}, None
        for index, (name, examples) in enumerate(dev_sets.items()):
            title = f"evaluation on {name}"
            outputs = predict(examples, "eval" if index == 0 else name, title, run.eval_batch_size)
            thresholds = None
            if multi_labels and index == 0:
                real = outputs["real"] > 0
                thresholds = own_results.choose_thresholds(
                    outputs["predictions"][real],
                    outputs["labels"][real],
                    how,
                    run.min_label_positives,
                )
                chosen["thresholds"] = thresholds
            # MNLI's mismatched set reports under eval_mismatched_* beside the matched keys.
            prefix = "" if index == 0 else name.replace("dev_", "")
            results.update(
                _eval_metrics(
                    run,
                    processor,
                    outputs,
                    run.eval_batch_size,
                    prefix,
                    thresholds if thresholds is not None else chosen.get("thresholds"),
                )
            )
            if index == 0 and problem == own_results.SINGLE_LABEL:
                counts = predicted_class_counts(outputs["predictions"], outputs["real"], labels)
            if final and index == 0:
                _report_files(output_dir, processor, outputs, thresholds)
                if multi_labels:
                    write_thresholds_file(
                        os.path.join(output_dir, THRESHOLDS_FILE), labels, thresholds
                    )
        return results, counts

    glue_name = run.task_name if is_glue_processor(processor) else None
    metric = official_metric("classifier", glue_name, problem)
    evaluation = fine_tuning.dev_evaluation(
        run, trainer, output_dir, metric, dev_evaluation, bert_config
    )

    if run.do_train:
        logging.info("  Num examples = %d", len(train_examples))
        if len(owners) != len(train_examples):
            logging.info("  Num windows = %d", len(owners))
        beside = None
        if distillation:
            beside = distillation.teacher_records(
                output_dir,
                strategy,
                train_config,
                lambda batching: dataset(path, run.eval_batch_size, False, 0, batching),
                [int(owner < num_gold) for owner in owners],
                run.max_seq_length,
            )
        with fine_tuning.reading_own_records(path):
            trainer.train(
                lambda skip, batching: dataset(
                    path, train_config.train_batch_size, True, skip, batching, beside
                ),
                evaluation if evaluation and evaluation.keep_best else None,
            )

    results = evaluation.final(final=True) if run.do_eval else {}

    if run.do_predict:
        thresholds = None
        if multi_labels:
            thresholds = chosen.get("thresholds")
            if thresholds is None:
                thresholds = saved_thresholds(
                    own_results.parse_decision_threshold(run.decision_threshold),
                    earlier_run_folders(run.output_dir, train_config.init_checkpoint),
                    labels,
                )
        for index, (board_name, examples) in enumerate(test_sets.items()):
            name = "predict" if index == 0 else f"predict_{board_name}"
            title = f"prediction on {board_name}"
            outputs = predict(examples, name, title, run.predict_batch_size)
            predictions = outputs["predictions"][outputs["real"] > 0]
            if len(predictions) != sum(not isinstance(e, PaddingInputExample) for e in examples):
                raise RuntimeError(f"{len(predictions)} predictions for {len(examples)} examples")
            if index == 0:
                write_test_results(os.path.join(output_dir, "test_results.tsv"), predictions)
                write_prediction_file(
                    os.path.join(output_dir, PREDICTIONS_FILE),
                    predictions,
                    labels,
                    problem,
                    thresholds,
                )
            if processor.leaderboard_names:
                write_leaderboard_file(
                    os.path.join(output_dir, f"{board_name}.tsv"), predictions, processor
                )
    return results
