r"""Masked LM + next-sentence pre-training and evaluation on create_pretraining_data.py output.

The original's command lines work unchanged, e.g.:

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord \
        --output_dir=/tmp/pretraining_output --do_train=True --do_eval=True \
        --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 \
        --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=20 \
        --num_warmup_steps=10 --learning_rate=2e-5

Running the same command again after an interruption resumes from the last checkpoint in
--output_dir. New flags: --strategy, --precision, --use_xla, --optimizer,
--num_accumulation_steps, --gradient_checkpointing (see command_line/flags.py).
"""

from absl import flags

from command_line import flags as runner_flags
from command_line import memory_flags
from command_line.flag_rules import check_flags
from command_line.tensorflow_logs import log_at_info, quiet_tensorflow_logs
from fileio.errors import run_command
from fileio.patterns import expand_file_patterns
from modeling.config import BertConfig
from training.settings import settings_from_flags

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

runner_flags.define_model_flags(with_vocab=False)
runner_flags.define_run_flags(fine_tuning=False)
flags.DEFINE_string("input_file", None, "TFRecord files (comma-separated globs).")
flags.DEFINE_integer("max_seq_length", 128, "Must equal create_pretraining_data's value.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Must equal create_pretraining_data's value.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
runner_flags.define_tpu_flags()
runner_flags.define_training_flags()


def main(_):
    log_at_info(FLAGS)
    check_flags(FLAGS)
    if memory_flags.printed_memory_plan(FLAGS):
        return
    if not FLAGS.do_train and not FLAGS.do_eval:
        raise ValueError("At least one of `do_train` or `do_eval` must be True.")
    bert_config = BertConfig.from_json_file(FLAGS.bert_config_file).validate()
    bert_config.check_max_seq_length(FLAGS.max_seq_length)
    # Every pattern must name files (a remote one is listed by TensorFlow, which loads then).
    expand_file_patterns(FLAGS.input_file)
    # TensorFlow loads here, once the command line is known to work.
    from jobs.pretraining_run import PretrainingRun, run_pretraining

    strategy = runner_flags.start_tensorflow(FLAGS)
    run = settings_from_flags(PretrainingRun, FLAGS)
    run_pretraining(
        run, bert_config, strategy, runner_flags.train_config_from_flags(FLAGS, strategy)
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "bert_config_file", "output_dir"])
    run_command(main)
