"""run_squad's train / predict sequence on the shared Trainer."""

import dataclasses
import os
import random

import tensorflow as tf
from absl import logging

from data.squad import postprocess
from data.squad.examples import read_squad_examples
from data.squad.features import convert_examples_to_features
from data.squad.records import squad_dataset, write_squad_tfrecord
from training import fine_tuning
from training.loop import Trainer
from training.strategy import input_in_background
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


def run_squad(run, bert_config, tokenizer, strategy, train_config):
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
    """
    tf.io.gfile.makedirs(run.output_dir)
    train_examples = []
    if run.do_train:
        train_examples = read_squad_examples(run.train_file, True, run.version_2_with_negative)
        random.Random(_EXAMPLE_SHUFFLE_SEED).shuffle(train_examples)
        # Counted in examples, not features, as the original: features outnumber examples.
        train_config = fine_tuning.with_training_steps(
            train_config, len(train_examples), run.num_train_epochs, run.warmup_proportion
        )
    trainer = Trainer(SquadTask(bert_config), strategy, train_config)

    if run.do_train:
        features, path = _write_features(run, train_examples, tokenizer, "train", True)
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Num split examples = %d", len(features))
        features = None  # training reads the file; the list can be large
        trainer.train(
            lambda skip: squad_dataset(
                path,
                run.max_seq_length,
                train_config.train_batch_size,
                True,
                train_config.seed,
                skip,
            )
        )

    if not run.do_predict:
        return {}
    examples = read_squad_examples(run.predict_file, False, run.version_2_with_negative)
    features, path = _write_features(run, examples, tokenizer, "eval", False)
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(examples))
    logging.info("  Num split examples = %d", len(features))
    logging.info("  Batch size = %d", run.predict_batch_size)
    dataset = squad_dataset(
        path,
        run.max_seq_length,
        run.predict_batch_size,
        False,
        background=input_in_background(strategy),
    )
    outputs = trainer.predict(dataset)
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
