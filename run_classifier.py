"""Fine-tunes, evaluates and predicts sentence (pair) classifiers: every GLUE task and XNLI.

The original's command lines work unchanged, e.g.:

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
        --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
        --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
        --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
        --output_dir=/tmp/mrpc_output/

With --do_predict it writes test_results.tsv (the original's format) and the GLUE leaderboard
file(s) of the task (e.g. MRPC.tsv); `python -m data.glue_submission` zips a full set.
"""

import tensorflow as tf
from absl import app, flags, logging

from data import classifier_data, tokenization
from modeling.config import BertConfig
from training import flags as training_flags
from training.classifier_run import ClassifierRun, run_classifier

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None, "Directory with the task's .tsv files.")
flags.DEFINE_string("bert_config_file", None, "bert_config.json of the pre-trained model.")
flags.DEFINE_string(
    "task_name", None, "cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, ax, xnli."
)
flags.DEFINE_string("vocab_file", None, "vocab.txt of the pre-trained model.")
flags.DEFINE_string("output_dir", None, "Checkpoints, TFRecords and results.")
flags.DEFINE_string("init_checkpoint", None, "Usually the pre-trained BERT checkpoint.")
flags.DEFINE_bool("do_lower_case", True, "True for uncased models, False for cased ones.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum total length after WordPiece.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to run the model on the test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1, "Proportion of training with linear warmup.")
flags.DEFINE_string("xnli_language", "zh", "XNLI language (the original fixed it to zh).")
training_flags.define_tpu_flags()
training_flags.define_training_flags()


def main(_):
    logging.set_verbosity(logging.INFO)
    # The original's start-up checks, in its order and with its messages.
    tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    if not FLAGS.do_train and not FLAGS.do_eval and not FLAGS.do_predict:
        raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    bert_config = BertConfig.from_json_file(FLAGS.bert_config_file).validate()
    bert_config.check_max_seq_length(FLAGS.max_seq_length)
    strategy = training_flags.strategy_from_flags(FLAGS)
    tf.io.gfile.makedirs(FLAGS.output_dir)
    is_xnli = classifier_data.canonical_task_name(FLAGS.task_name) == "xnli"
    processor = classifier_data.get_processor(
        FLAGS.task_name, **({"language": FLAGS.xnli_language} if is_xnli else {})
    )
    tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)
    training_flags.seed_from_flags(FLAGS)

    run = ClassifierRun(
        task_name=classifier_data.canonical_task_name(FLAGS.task_name),
        data_dir=FLAGS.data_dir,
        output_dir=FLAGS.output_dir,
        max_seq_length=FLAGS.max_seq_length,
        do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval,
        do_predict=FLAGS.do_predict,
        train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
        num_train_epochs=FLAGS.num_train_epochs,
        warmup_proportion=FLAGS.warmup_proportion,
        seed=FLAGS.seed,
    )
    train_config = training_flags.train_config_from_flags(FLAGS)
    run_classifier(run, bert_config, processor, tokenizer, strategy, train_config)


if __name__ == "__main__":
    flags.mark_flags_as_required(
        ["data_dir", "task_name", "vocab_file", "bert_config_file", "output_dir"]
    )
    app.run(main)
