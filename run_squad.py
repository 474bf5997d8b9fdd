r"""Fine-tunes and predicts SQuAD 1.1 and 2.0 answer spans.

The original's command lines work unchanged, e.g.:

    python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \
        --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True \
        --train_file=$SQUAD_DIR/train-v1.1.json --do_predict=True \
        --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
        --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

With --do_predict it writes predictions.json and nbest_predictions.json (and null_odds.json with
--version_2_with_negative), the files the official evaluate-v1.1.py / evaluate-v2.0.py read.
"""

from absl import flags

from command_line import flags as runner_flags
from command_line import memory_flags
from command_line.flag_rules import check_flags, check_input_files
from command_line.init_checkpoint import check_init_checkpoint
from command_line.tensorflow_logs import log_at_info, quiet_tensorflow_logs
from data.tokenization.full_tokenizer import FullTokenizer, validate_case_matches_checkpoint
from fileio.errors import run_command
from modeling.config import BertConfig
from training.settings import settings_from_flags, task_default

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

runner_flags.define_model_flags()
runner_flags.define_run_flags(fine_tuning=True)
flags.DEFINE_string("train_file", None, "SQuAD json for training, e.g. train-v1.1.json.")
flags.DEFINE_string("predict_file", None, "SQuAD json for predictions, e.g. dev-v1.1.json.")
flags.DEFINE_integer(
    "max_seq_length",
    task_default("squad", "max_seq_length"),
    "Maximum total length after WordPiece.",
)
flags.DEFINE_integer(
    "doc_stride",
    task_default("squad", "doc_stride"),
    "Stride between the chunks of a long document.",
)
flags.DEFINE_integer(
    "max_query_length",
    task_default("squad", "max_query_length"),
    "Question tokens kept (longer ones are truncated).",
)
flags.DEFINE_bool(
    "do_predict",
    False,
    "Predict --predict_file: predictions.json, nbest_predictions.json (and null_odds.json for "
    "SQuAD 2.0).",
)
flags.DEFINE_bool(
    "do_eval",
    False,
    "Predict --predict_file (a dev set) and score it with the official SQuAD definitions into "
    "eval_results.txt; SQuAD 2.0 also saves the best null threshold for export_model.py.",
)
flags.DEFINE_integer(
    "n_best_size",
    task_default("squad", "n_best_size"),
    "Size of the n-best list in nbest_predictions.json.",
)
flags.DEFINE_integer(
    "max_answer_length",
    task_default("squad", "max_answer_length"),
    "Longest answer, in WordPiece tokens.",
)
flags.DEFINE_bool("verbose_logging", False, "Log the alignment warnings of the answer text.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: some questions have no answer.")
flags.DEFINE_float(
    "null_score_diff_threshold", 0.0, "Predict no answer if null - best non-null > this."
)
runner_flags.define_tpu_flags()
runner_flags.define_training_flags()


def validate_flags_or_throw(bert_config):
    """The original's start-up checks, in its order and with its messages."""
    validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    if not FLAGS.do_train and not FLAGS.do_predict and not FLAGS.do_eval:
        raise ValueError("At least one of `do_train` or `do_predict` must be True.")
    if FLAGS.do_train and not FLAGS.train_file:
        raise ValueError("If `do_train` is True, then `train_file` must be specified.")
    if (FLAGS.do_predict or FLAGS.do_eval) and not FLAGS.predict_file:
        raise ValueError("If `do_predict` is True, then `predict_file` must be specified.")
    # max_seq_length > max_query_length + 3, the original's last check, is in check_flags.
    bert_config.check_max_seq_length(FLAGS.max_seq_length)


def main(_, distillation=None):
    """Runs the command; `distillation`: None, or run_distill.py's callable that returns the
    `jobs.distillation.Distillation` of a student run (called once TensorFlow has loaded)."""
    log_at_info(FLAGS)
    check_flags(FLAGS)
    if memory_flags.printed_memory_plan(FLAGS):
        return
    bert_config = BertConfig.from_json_file(FLAGS.bert_config_file).validate()
    validate_flags_or_throw(bert_config)
    files = [(FLAGS.train_file, "train_file", "do_train")] if FLAGS.do_train else []
    for phase in ("do_eval", "do_predict"):
        if FLAGS[phase].value:
            files.append((FLAGS.predict_file, "predict_file", phase))
    check_input_files(FLAGS, files)
    tokenizer = FullTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)
    check_init_checkpoint(FLAGS, bert_config)
    runner_flags.exit_if_dry_run(FLAGS)
    # TensorFlow loads here, once the command line is known to work.
    from jobs.squad_run import SquadRun, run_squad

    strategy = runner_flags.start_tensorflow(FLAGS)
    run = settings_from_flags(SquadRun, FLAGS)
    run_squad(
        run,
        bert_config,
        tokenizer,
        strategy,
        runner_flags.train_config_from_flags(FLAGS, strategy),
        distillation=distillation and distillation(),
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["vocab_file", "bert_config_file", "output_dir"])
    run_command(main)
