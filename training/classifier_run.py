"""run_classifier's train / eval / predict sequence on the shared Trainer."""

import dataclasses
import os

import numpy as np
from absl import logging

from data import classifier_data, glue_submission, input_pipeline
from training import metrics
from training.loop import TrainConfig, Trainer
from training.strategy import input_in_background
from training.summaries import write_eval_results
from training.tasks import ClassifierTask


@dataclasses.dataclass
class ClassifierRun:
    """Plain settings of one run_classifier invocation."""

    task_name: str
    data_dir: str
    output_dir: str
    max_seq_length: int
    do_train: bool
    do_eval: bool
    do_predict: bool
    train_batch_size: int
    eval_batch_size: int
    predict_batch_size: int
    num_train_epochs: float
    warmup_proportion: float
    seed: int = 12345


def _features(processor, examples, run, tokenizer, name):
    """Converts examples and writes `<name>.tf_record` in output_dir, as the original does on
    every run."""
    features = classifier_data.convert_examples_to_features(
        examples, processor.get_labels(), run.max_seq_length, tokenizer, processor.is_regression
    )
    path = os.path.join(run.output_dir, f"{name}.tf_record")
    classifier_data.write_classifier_tfrecord(features, path, processor.is_regression)
    return path


def _dataset(path, run, processor, batch_size, is_training, strategy, skip=0):
    return input_pipeline.classifier_dataset(
        path,
        run.max_seq_length,
        processor.is_regression,
        batch_size,
        is_training,
        seed=run.seed,
        skip_batches=skip,
        background=is_training or input_in_background(strategy),
    )


def training_steps(num_examples, run):
    """The original's arithmetic: int(examples / batch * epochs), warmup int(steps * p)."""
    steps = int(num_examples / run.train_batch_size * run.num_train_epochs)
    return max(steps, 1), int(max(steps, 1) * run.warmup_proportion)


def _eval_metrics(run, processor, outputs, batch_size, prefix=""):
    """eval_results entries from per-example outputs: the original keys plus the task's."""
    real = outputs["real"] > 0
    losses = outputs["per_example_loss"]
    # The Estimator's `loss` is the mean over eval batches of each batch's mean loss.
    batch_means = [losses[i : i + batch_size].mean() for i in range(0, len(losses), batch_size)]
    predictions = outputs["predictions"]
    if not processor.is_regression:
        predictions = np.argmax(predictions, axis=-1)
    labels = outputs["labels"]
    results = {
        "eval_accuracy": float(metrics.accuracy(predictions[real], labels[real]))
        if not processor.is_regression
        else None,
        "eval_loss": float(losses[real].mean()),
        "loss": float(np.mean(batch_means)),
    }
    results.update(metrics.glue_metrics(run.task_name, predictions[real], labels[real]))
    results = {k: v for k, v in results.items() if v is not None}
    if prefix:
        results = {
            k.replace("eval_", f"eval_{prefix}_", 1)
            if k.startswith("eval_")
            else f"{prefix}_{k}": v
            for k, v in results.items()
        }
    return results


def run_classifier(run, bert_config, processor, tokenizer, strategy, train_config):
    """Trains, evaluates and predicts as requested; returns the eval results (or {}).

    Args:
        run: `ClassifierRun`.
        bert_config: the encoder's `BertConfig`.
        processor: a `data.classifier_data` processor.
        tokenizer: a `FullTokenizer`.
        strategy: a `tf.distribute.Strategy`.
        train_config: `TrainConfig` (steps and warmup are derived here from the data).
    """
    num_labels = len(processor.get_labels())
    train_examples = processor.get_train_examples(run.data_dir) if run.do_train else []
    if run.do_train:
        steps, warmup = training_steps(len(train_examples), run)
        train_config = dataclasses.replace(
            train_config, num_train_steps=steps, num_warmup_steps=warmup
        )
    task = ClassifierTask(bert_config, num_labels, processor.is_regression)
    trainer = Trainer(task, strategy, train_config)

    if run.do_train:
        path = _features(processor, train_examples, run, tokenizer, "train")
        logging.info("  Num examples = %d", len(train_examples))
        trainer.train(
            lambda skip: _dataset(path, run, processor, run.train_batch_size, True, strategy, skip)
        )

    def outputs_fn(aux):
        return {k: aux[k] for k in ("predictions", "per_example_loss", "labels", "real")}

    results = {}
    if run.do_eval:
        for index, (name, examples) in enumerate(processor.get_dev_sets(run.data_dir).items()):
            path = _features(processor, examples, run, tokenizer, "eval" if index == 0 else name)
            logging.info("***** Running evaluation on %s *****", name)
            logging.info(
                "  Num examples = %d (%d actual, %d padding)", len(examples), len(examples), 0
            )
            logging.info("  Batch size = %d", run.eval_batch_size)
            outputs = trainer.predict(
                _dataset(path, run, processor, run.eval_batch_size, False, strategy), outputs_fn
            )
            # MNLI's mismatched set reports under eval_mismatched_* beside the matched keys.
            prefix = "" if index == 0 else name.replace("dev_", "")
            results.update(_eval_metrics(run, processor, outputs, run.eval_batch_size, prefix))
        results["global_step"] = trainer.step
        write_eval_results(run.output_dir, results)

    if run.do_predict:
        for index, (board_name, examples) in enumerate(
            processor.get_test_sets(run.data_dir).items()
        ):
            path = _features(
                processor,
                examples,
                run,
                tokenizer,
                "predict" if index == 0 else f"predict_{board_name}",
            )
            logging.info("***** Running prediction on %s *****", board_name)
            logging.info(
                "  Num examples = %d (%d actual, %d padding)", len(examples), len(examples), 0
            )
            outputs = trainer.predict(
                _dataset(path, run, processor, run.predict_batch_size, False, strategy), outputs_fn
            )
            predictions = outputs["predictions"]
            if len(predictions) != len(examples):
                raise RuntimeError(f"{len(predictions)} predictions for {len(examples)} examples")
            if index == 0:
                probabilities = predictions[:, None] if predictions.ndim == 1 else predictions
                glue_submission.write_test_results(
                    os.path.join(run.output_dir, "test_results.tsv"), probabilities
                )
            glue_submission.write_leaderboard_file(
                os.path.join(run.output_dir, f"{board_name}.tsv"), predictions, processor
            )
    return results


__all__ = ["ClassifierRun", "TrainConfig", "run_classifier", "training_steps"]
