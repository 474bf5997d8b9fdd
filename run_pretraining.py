"""Masked LM + next-sentence pre-training and evaluation on create_pretraining_data.py output.

The original's command lines work unchanged, e.g.:

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord \
        --output_dir=/tmp/pretraining_output --do_train=True --do_eval=True \
        --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 \
        --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=20 \
        --num_warmup_steps=10 --learning_rate=2e-5

Running the same command again after an interruption resumes from the last checkpoint in
--output_dir. New flags: --strategy, --precision, --use_xla, --optimizer,
--num_accumulation_steps (see training/flags.py).
"""

import tensorflow as tf
from absl import app, flags, logging

from data import input_pipeline
from modeling.config import BertConfig
from training import flags as training_flags
from training.loop import Trainer
from training.strategy import input_in_background
from training.summaries import write_eval_results
from training.tasks import PretrainingTask

FLAGS = flags.FLAGS

flags.DEFINE_string("bert_config_file", None, "bert_config.json of the model to train.")
flags.DEFINE_string("input_file", None, "TFRecord files (comma-separated globs).")
flags.DEFINE_string("output_dir", None, "Checkpoints, summaries and eval_results.txt.")
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (usually a pre-trained BERT).")
flags.DEFINE_integer("max_seq_length", 128, "Must equal create_pretraining_data's value.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Must equal create_pretraining_data's value.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
training_flags.define_tpu_flags()
training_flags.define_training_flags()


def main(_):
    logging.set_verbosity(logging.INFO)
    if not FLAGS.do_train and not FLAGS.do_eval:
        raise ValueError("At least one of `do_train` or `do_eval` must be True.")
    config = BertConfig.from_json_file(FLAGS.bert_config_file).validate()
    config.check_max_seq_length(FLAGS.max_seq_length)
    strategy = training_flags.strategy_from_flags(FLAGS)
    files = input_pipeline.expand_file_patterns(FLAGS.input_file)
    logging.info("*** Input Files ***")
    for path in files:
        logging.info("  %s", path)
    spec = input_pipeline.pretraining_feature_spec(
        FLAGS.max_seq_length, FLAGS.max_predictions_per_seq
    )
    input_pipeline.check_record_lengths(files[0], spec)
    tf.io.gfile.makedirs(FLAGS.output_dir)
    training_flags.seed_from_flags(FLAGS)

    train_config = training_flags.train_config_from_flags(
        FLAGS,
        num_train_steps=FLAGS.num_train_steps,
        num_warmup_steps=FLAGS.num_warmup_steps,
    )
    trainer = Trainer(PretrainingTask(config), strategy, train_config)

    def dataset(batch_size, is_training, skip=0):
        return input_pipeline.pretraining_dataset(
            files,
            FLAGS.max_seq_length,
            FLAGS.max_predictions_per_seq,
            batch_size,
            is_training=is_training,
            seed=FLAGS.seed,
            skip_batches=skip,
            background=is_training or input_in_background(strategy),
        )

    if FLAGS.do_train:
        trainer.train(lambda skip: dataset(FLAGS.train_batch_size, True, skip))
        trainer.export_original(FLAGS.output_dir, config)
    if FLAGS.do_eval:
        logging.info("  Batch size = %d", FLAGS.eval_batch_size)
        results = trainer.evaluate(dataset(FLAGS.eval_batch_size, False), FLAGS.max_eval_steps)
        write_eval_results(FLAGS.output_dir, results)


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "bert_config_file", "output_dir"])
    app.run(main)
