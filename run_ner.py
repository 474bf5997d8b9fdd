r"""Fine-tunes, evaluates and predicts named-entity taggers on CoNLL-format data (CoNLL-2003,
WNUT, OntoNotes, biomedical sets: any tag set in IOB1 or IOB2).

In the original runners' style, e.g. CoNLL-2003 with the paper's protocol (cased model, first
piece of each word tagged, maximal document context):

    python run_ner.py --do_train=true --do_eval=true --do_predict=true \
        --data_dir=$NER_DIR --vocab_file=$BERT_BASE_DIR/vocab.txt \
        --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --document_context=true \
        --max_seq_length=128 --train_batch_size=32 --learning_rate=5e-5 \
        --num_train_epochs=3.0 --output_dir=/tmp/ner_output/

$NER_DIR holds train.txt, dev.txt and test.txt. It writes eval_results.txt (conlleval's entity
precision, recall and F1), eval_predictions.txt and test_predictions.txt (every input line, its
columns one space apart whether the input used spaces or tabs, with the predicted tag appended:
`perl conlleval.pl < eval_predictions.txt` scores it).
"""

import os

from absl import flags

from command_line import flags as runner_flags
from command_line import memory_flags
from command_line.flag_rules import check_input_files, ner_window, requested_splits
from command_line.init_checkpoint import check_init_checkpoint
from command_line.tensorflow_logs import quiet_tensorflow_logs
from fileio.errors import run_command
from training.settings import settings_from_flags, task_default

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

# Case carries much of the entity signal: this runner defaults to cased models.
runner_flags.define_model_flags(lower_case=False)
runner_flags.define_run_flags(fine_tuning=True, head_dropout=True, length_grouping=True)
flags.DEFINE_string("data_dir", None, "Directory with train.txt, dev.txt and test.txt (CoNLL).")
flags.DEFINE_string(
    "label_file", None, "Tags, one per line, with 'O' (default: learned from train.txt)."
)
flags.DEFINE_integer(
    "max_seq_length", task_default("ner", "max_seq_length"), "Maximum total length after WordPiece."
)
flags.DEFINE_integer(
    "doc_stride",
    task_default("ner", "doc_stride"),
    "Stride between the windows of a sentence too long for one (default: 64, or half the "
    "window, max_seq_length - 2, when 64 would leave consecutive windows no shared context).",
)
flags.DEFINE_bool(
    "document_context",
    False,
    "Fill each window with the neighbouring sentences of its document (the BERT paper's "
    "CoNLL-2003 setting); only the centre sentence is tagged.",
)
flags.DEFINE_bool("do_eval", False, "Whether to run eval on dev.txt.")
flags.DEFINE_bool("do_predict", False, "Whether to tag test.txt.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
runner_flags.define_tpu_flags()
runner_flags.define_training_flags()


def main(_, distillation=None):
    """Runs the command; `distillation`: None, or run_distill.py's callable that returns the
    `jobs.distillation.Distillation` of a student run (called once TensorFlow has loaded)."""
    if memory_flags.printed_memory_plan(FLAGS):
        return
    if FLAGS.max_seq_length is not None and FLAGS.max_seq_length >= 3:
        runner_flags.resolve_default_stride(FLAGS, ner_window(FLAGS.max_seq_length))
    bert_config, tokenizer = runner_flags.check_fine_tuning(FLAGS)
    files = [
        (os.path.join(FLAGS.data_dir, f"{split}.txt"), "data_dir", phase)
        for split, phase in requested_splits(FLAGS)
    ]
    if FLAGS.label_file:
        files.append((FLAGS.label_file, "label_file", None))
    check_input_files(FLAGS, files)
    check_init_checkpoint(FLAGS, bert_config)
    runner_flags.exit_if_dry_run(FLAGS)
    # TensorFlow loads here, once the command line is known to work.
    from jobs.ner_run import NerRun, run_ner

    strategy = runner_flags.start_tensorflow(FLAGS)
    run = settings_from_flags(NerRun, FLAGS)
    train_config = runner_flags.train_config_from_flags(FLAGS, strategy)
    run_ner(
        run,
        bert_config,
        tokenizer,
        strategy,
        train_config,
        distillation=distillation and distillation(),
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["data_dir", "vocab_file", "bert_config_file", "output_dir"])
    run_command(main)
