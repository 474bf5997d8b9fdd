"""run_squad's train / predict sequence on the shared Trainer."""

import dataclasses
import json
import os
import random
import tempfile

import tensorflow as tf
from absl import logging

from data.dev_metrics import official_metric
from data.squad import evaluation, postprocess
from data.squad.examples import read_squad_examples
from data.squad.features import convert_examples_to_features
from data.squad.records import squad_dataset, write_squad_tfrecord
from fileio.atomic import write_atomically
from fileio.errors import UserError
from jobs import fine_tuning
from training.loop import Trainer
from training.strategy import worker_output_dir
from training.summaries import write_eval_results
from training.tasks import SquadTask

# The original shuffles the training examples once with this fixed seed, whatever --seed says.
_EXAMPLE_SHUFFLE_SEED = 12345


@dataclasses.dataclass
class SquadRun:
    """Settings of one run_squad invocation: the flags of the same names."""

    output_dir: str
    train_file: str | None
    predict_file: str | None
    do_train: bool
    do_predict: bool
    do_eval: bool
    do_lower_case: bool
    max_seq_length: int
    doc_stride: int
    max_query_length: int
    predict_batch_size: int
    num_train_epochs: float
    warmup_proportion: float
    n_best_size: int
    max_answer_length: int
    version_2_with_negative: bool
    null_score_diff_threshold: float
    verbose_logging: bool


def _write_features(run, examples, tokenizer, name, is_training):
    """Converts examples and writes `<name>.tf_record` in output_dir; returns (features, path)."""
    features = convert_examples_to_features(
        examples,
        tokenizer,
        run.max_seq_length,
        run.doc_stride,
        run.max_query_length,
        is_training,
    )
    path = fine_tuning.write_records(
        run.output_dir, name, write_squad_tfrecord, features, is_training=is_training
    )
    return features, path


def run_squad(run, bert_config, tokenizer, strategy, train_config, distillation=None):
    """Trains and predicts as requested; returns the predictions dict (or {}).

    Writes `train.tf_record`, checkpoints and `bert_model.ckpt`-style checkpoints while
    training; `eval.tf_record`, `predictions.json`, `nbest_predictions.json` and (SQuAD 2.0)
    `null_odds.json` when predicting, all in `run.output_dir`.

    Args:
        run: `SquadRun`.
        bert_config: the encoder's `BertConfig`.
        tokenizer: a `FullTokenizer`.
        strategy: a `tf.distribute.Strategy`.
        train_config: `TrainConfig` (steps and warmup are derived here from the data).
        distillation: None, or a `jobs.distillation.Distillation`: the run trains a student
            of its teacher (run_distill.py).
    """
    # Both files are read (and refused if they yield nothing) before output_dir is created.
    examples = _read_examples(run)
    with worker_output_dir(strategy, run.output_dir) as output_dir:
        # Files go to this worker's directory; checkpoints follow train_config.output_dir.
        return _run(
            dataclasses.replace(run, output_dir=output_dir),
            bert_config,
            tokenizer,
            strategy,
            train_config,
            examples,
            distillation,
        )


def _read_examples(run):
    """(training examples, shuffled as the original; prediction examples) of the run.

    Raises:
        UserError: naming the file if a requested set has no example (for training: none whose
            answer text was found at its answer_start).
    """
    train_examples, predict_examples = [], []
    if run.do_train:
        train_examples = read_squad_examples(run.train_file, True, run.version_2_with_negative)
        if not train_examples:
            raise UserError(
                f"--train_file={run.train_file} yields no training example: it holds no "
                "question, or no answer text was found at its answer_start (see the 'Could not "
                "find answer' warnings above); pass a SQuAD training file such as train-v1.1.json."
            )
        random.Random(_EXAMPLE_SHUFFLE_SEED).shuffle(train_examples)
    if run.do_predict or run.do_eval:
        predict_examples = read_squad_examples(run.predict_file, False, run.version_2_with_negative)
        if not predict_examples:
            raise UserError(
                f"--predict_file={run.predict_file} holds no question to answer; pass a SQuAD "
                "file such as dev-v1.1.json."
            )
    return train_examples, predict_examples


def _run(run, bert_config, tokenizer, strategy, train_config, examples, distillation=None):
    train_examples, examples = examples
    if run.do_train:
        # Counted in examples, not features, as the original: features outnumber examples.
        train_config = fine_tuning.with_training_steps(
            train_config, len(train_examples), run.num_train_epochs, run.warmup_proportion
        )
    if distillation:
        train_config = distillation.train_config(train_config)
        task = distillation.task(SquadTask, bert_config)
    else:
        task = SquadTask(bert_config)
    trainer = Trainer(task, strategy, train_config)

    written, dev_evals = {}, None

    def predict(predict_run):
        # Written once, when first needed: after training unless evaluated during it.
        if not written:
            written["eval"] = _write_features(run, examples, tokenizer, "eval", False)
        return _predict(predict_run, trainer, examples, *written["eval"])

    def dev_evaluation():
        # The weights of this step only: the prediction files go to a scratch folder.
        with tempfile.TemporaryDirectory(prefix="squad-eval-") as scratch:
            scratch_run = dataclasses.replace(run, output_dir=scratch)
            return _evaluate(scratch_run, predict(scratch_run)), None

    if run.do_eval:
        dev_evals = fine_tuning.dev_evaluation(
            run, trainer, run.output_dir, official_metric("squad"), dev_evaluation, bert_config
        )

    if run.do_train:
        train_features, train_path = _write_features(run, train_examples, tokenizer, "train", True)
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Num split examples = %d", len(train_features))
        beside = None
        if distillation:
            # Every feature of a training example has its gold answer span (or none, 0 and 0).
            beside = distillation.teacher_records(
                run.output_dir,
                strategy,
                train_config,
                lambda batching: squad_dataset(
                    train_path, run.max_seq_length, run.predict_batch_size, False, batching=batching
                ),
                [1] * len(train_features),
                run.max_seq_length,
            )
        train_features = None  # training reads the file; the list can be large
        with fine_tuning.reading_own_records(train_path):
            trainer.train(
                lambda skip, batching: squad_dataset(
                    train_path,
                    run.max_seq_length,
                    train_config.train_batch_size,
                    True,
                    train_config.data_seed,
                    skip,
                    batching,
                    beside,
                ),
                dev_evals if dev_evals and dev_evals.keep_best else None,
            )

    if not (run.do_predict or run.do_eval):
        return {}
    predictions = predict(run)
    if run.do_eval:
        results = {**_evaluate(run, predictions), "global_step": trainer.step}
        write_eval_results(run.output_dir, results, title="SQuAD evaluation")
        dev_evals.record(trainer.step, results)
    return predictions


def _predict(run, trainer, examples, features, path):
    """predictions.json, nbest_predictions.json (and null_odds.json) of the trainer's weights
    in run.output_dir; returns the predictions dict."""
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(examples))
    logging.info("  Num split examples = %d", len(features))
    logging.info("  Batch size = %d", run.predict_batch_size)
    with fine_tuning.reading_own_records(path):
        outputs = trainer.predict(
            lambda batching: squad_dataset(
                path, run.max_seq_length, run.predict_batch_size, False, batching=batching
            ),
            len(features),
            **fine_tuning.progress_counting(len(features), len(examples)),
        )
    if len(outputs["unique_ids"]) != len(features):
        raise RuntimeError(f"{len(outputs['unique_ids'])} results for {len(features)} features")
    results = [
        postprocess.RawResult(int(uid), start.tolist(), end.tolist())
        for uid, start, end in zip(
            outputs["unique_ids"], outputs["start_logits"], outputs["end_logits"], strict=True
        )
    ]
    return postprocess.write_predictions(
        examples,
        features,
        results,
        run.n_best_size,
        run.max_answer_length,
        run.do_lower_case,
        os.path.join(run.output_dir, "predictions.json"),
        os.path.join(run.output_dir, "nbest_predictions.json"),
        os.path.join(run.output_dir, "null_odds.json"),
        version_2_with_negative=run.version_2_with_negative,
        null_score_diff_threshold=run.null_score_diff_threshold,
        verbose_logging=run.verbose_logging,
    )


def _evaluate(run, predictions):
    """Scores predictions.json on the predict file by the official definitions; for SQuAD 2.0
    also writes the best null-score threshold (`best_null_score_diff_threshold`)."""
    with tf.io.gfile.GFile(run.predict_file) as f:
        dataset = json.load(f)["data"]
    if not any(
        qa.get("answers") or qa.get("is_impossible") for qa in evaluation.questions(dataset)
    ):
        raise ValueError(
            f"--do_eval: {run.predict_file} has no answers to score against; pass the dev "
            "set (e.g. dev-v1.1.json) as --predict_file, or drop --do_eval."
        )
    out = run.output_dir
    if not run.version_2_with_negative:
        return evaluation.evaluate_v1(dataset, predictions)
    with tf.io.gfile.GFile(os.path.join(out, "null_odds.json")) as f:
        null_odds = json.load(f)
    with tf.io.gfile.GFile(os.path.join(out, "nbest_predictions.json")) as f:
        answers = evaluation.best_non_null_answers(json.load(f))
    results = evaluation.evaluate_v2(dataset, predictions, null_odds, answers)
    threshold = results["best_f1_thresh"]
    write_atomically(os.path.join(out, evaluation.THRESHOLD_FILE), f"{threshold!r}\n")
    logging.info(
        "Best --null_score_diff_threshold on %s: %r (F1 %.2f at it, %.2f at %r); saved in "
        "%s for export_model.py --task=squad.",
        run.predict_file,
        threshold,
        results["best_f1"],
        results["f1"],
        run.null_score_diff_threshold,
        evaluation.THRESHOLD_FILE,
    )
    return results
