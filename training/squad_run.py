"""run_squad's train / predict sequence on the shared Trainer."""

import dataclasses
import os
import random

from absl import logging

from data import input_pipeline, squad_data, squad_postprocess, squad_records
from training.classifier_run import training_steps
from training.loop import Trainer
from training.strategy import input_in_background
from training.tasks import SquadTask

# The original shuffles the training examples once with this fixed seed, whatever --seed says.
_EXAMPLE_SHUFFLE_SEED = 12345


@dataclasses.dataclass
class SquadRun:
    """Plain settings of one run_squad invocation (the original's flags)."""

    output_dir: str
    train_file: str = None
    predict_file: str = None
    do_train: bool = False
    do_predict: bool = False
    do_lower_case: bool = True
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    train_batch_size: int = 32
    predict_batch_size: int = 8
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    n_best_size: int = 20
    max_answer_length: int = 30
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0
    verbose_logging: bool = False
    seed: int = 12345


def _write_features(run, examples, tokenizer, name, is_training):
    """Converts examples and writes `<name>.tf_record` in output_dir, as the original does on
    every run; returns (features, path)."""
    features = squad_data.convert_examples_to_features(
        examples,
        tokenizer,
        run.max_seq_length,
        run.doc_stride,
        run.max_query_length,
        is_training,
    )
    path = os.path.join(run.output_dir, f"{name}.tf_record")
    squad_records.write_squad_tfrecord(features, path, is_training)
    return features, path


def _outputs(aux):
    return {k: aux[k] for k in ("unique_ids", "start_logits", "end_logits")}


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
    train_examples = []
    if run.do_train:
        train_examples = squad_data.read_squad_examples(
            run.train_file, True, run.version_2_with_negative
        )
        random.Random(_EXAMPLE_SHUFFLE_SEED).shuffle(train_examples)
        # Counted in examples, not features, as the original: features outnumber examples.
        steps, warmup = training_steps(len(train_examples), run)
        train_config = dataclasses.replace(
            train_config, num_train_steps=steps, num_warmup_steps=warmup
        )
    trainer = Trainer(SquadTask(bert_config), strategy, train_config)

    if run.do_train:
        features, path = _write_features(run, train_examples, tokenizer, "train", True)
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Num split examples = %d", len(features))
        logging.info("  Batch size = %d", run.train_batch_size)
        logging.info("  Num steps = %d", train_config.num_train_steps)
        features = None  # training reads the file; the list can be large
        trainer.train(
            lambda skip: input_pipeline.squad_dataset(
                path, run.max_seq_length, run.train_batch_size, True, run.seed, skip
            )
        )

    if not run.do_predict:
        return {}
    examples = squad_data.read_squad_examples(run.predict_file, False, run.version_2_with_negative)
    features, path = _write_features(run, examples, tokenizer, "eval", False)
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(examples))
    logging.info("  Num split examples = %d", len(features))
    logging.info("  Batch size = %d", run.predict_batch_size)
    dataset = input_pipeline.squad_dataset(
        path,
        run.max_seq_length,
        run.predict_batch_size,
        False,
        background=input_in_background(strategy),
    )
    outputs = trainer.predict(dataset, _outputs)
    if len(outputs["unique_ids"]) != len(features):
        raise RuntimeError(f"{len(outputs['unique_ids'])} results for {len(features)} features")
    results = [
        squad_postprocess.RawResult(int(uid), start.tolist(), end.tolist())
        for uid, start, end in zip(
            outputs["unique_ids"], outputs["start_logits"], outputs["end_logits"], strict=True
        )
    ]
    return squad_postprocess.write_predictions(
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
