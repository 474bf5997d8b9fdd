"""run_pretraining's train / export / eval sequence on the shared Trainer."""

import dataclasses

from absl import logging

from data.records import input_pipeline
from fileio.patterns import expand_file_patterns
from training.loop import Trainer
from training.strategy import worker_output_dir
from training.summaries import write_eval_results
from training.tasks import PretrainingTask

_REMEDY = "write it again with create_pretraining_data.py, or leave it out of --input_file"


@dataclasses.dataclass
class PretrainingRun:
    """Settings of one run_pretraining invocation: the flags of the same names."""

    input_file: str
    output_dir: str
    max_seq_length: int
    max_predictions_per_seq: int
    do_train: bool
    do_eval: bool
    eval_batch_size: int
    max_eval_steps: int


def run_pretraining(run, bert_config, strategy, train_config):
    """Trains, exports and evaluates as requested; returns the eval results (or {}).

    Writes the checkpoints, TensorBoard summaries, `bert_model.ckpt` + `bert_config.json` (the
    trained weights in the original layout, heads included) and `eval_results.txt`, all in
    `run.output_dir`.

    Args:
        run: `PretrainingRun`.
        bert_config: the model's `BertConfig`.
        strategy: a `tf.distribute.Strategy`.
        train_config: `TrainConfig`.

    Raises:
        ValueError: if `run.input_file` matches no file, its files hold no record, or its
            records do not fit the lengths.
    """
    files = expand_file_patterns(run.input_file)
    logging.info("*** Input Files ***")
    for path in files:
        logging.info("  %s", path)
    spec = input_pipeline.pretraining_feature_spec(run.max_seq_length, run.max_predictions_per_seq)
    damage = input_pipeline.naming_damaged_records(files, _REMEDY)
    # Before output_dir is created: files without a record are refused here.
    with damage:
        input_pipeline.check_record_lengths(files, spec)

    def dataset(batch_size, is_training, skip, batching):
        return input_pipeline.pretraining_dataset(
            files,
            run.max_seq_length,
            run.max_predictions_per_seq,
            batch_size,
            is_training=is_training,
            seed=train_config.data_seed,
            skip_batches=skip,
            batching=batching,
        )

    with worker_output_dir(strategy, run.output_dir) as output_dir, damage:
        trainer = Trainer(PretrainingTask(bert_config), strategy, train_config)
        if run.do_train:
            trainer.train(
                lambda skip, batching: dataset(train_config.train_batch_size, True, skip, batching)
            )
            trainer.export_original(run.output_dir, bert_config)
        results = {}
        if run.do_eval:
            logging.info("  Batch size = %d", run.eval_batch_size)
            results = trainer.evaluate(
                lambda batching: dataset(run.eval_batch_size, False, 0, batching),
                run.max_eval_steps,
            )
            write_eval_results(output_dir, results)
    return results
