r"""Fine-tunes, evaluates and predicts sentence (pair) classifiers: every GLUE task and XNLI.

The original's command lines work unchanged, e.g.:

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
        --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
        --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
        --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
        --output_dir=/tmp/mrpc_output/

With --do_predict it writes test_results.tsv (the original's format) and the GLUE leaderboard
file(s) of the task (e.g. MRPC.tsv); build_glue_submission.py zips a full set.

Your own data, no code (docs/own_data.md): CSV, TSV or JSON Lines files with their columns
named by flag, single-label, multi-label or regression, e.g.

    python run_classifier.py --train_file=train.csv --dev_file=dev.csv --test_file=test.csv \
        --text_a_column=review --label_column=sentiment --do_train --do_eval --do_predict ...

or a DataProcessor written for the original, unchanged: --processor=my_processors.py:MyProcessor.
"""

from absl import flags

from command_line import flags as runner_flags
from command_line import memory_flags, own_data_flags
from command_line.flag_rules import check_input_files, requested_splits
from command_line.init_checkpoint import check_init_checkpoint
from command_line.tensorflow_logs import quiet_tensorflow_logs
from data.glue.processors import canonical_task_name, is_glue_processor
from fileio.errors import run_command
from training.settings import settings_from_flags, task_default

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

runner_flags.define_model_flags()
runner_flags.define_run_flags(fine_tuning=True, head_dropout=True, length_grouping=True)
flags.DEFINE_string("data_dir", None, "Directory with the task's .tsv files.")
flags.DEFINE_string(
    "task_name",
    None,
    "cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, ax, xnli; any other name: your own "
    "files (--train_file ...).",
)
flags.DEFINE_integer(
    "max_seq_length",
    task_default("classifier", "max_seq_length"),
    "Maximum total length after WordPiece.",
)
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to run the model on the test set.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_string("xnli_language", "zh", "XNLI language (the original fixed it to zh).")
runner_flags.define_long_input_flags()
runner_flags.define_tpu_flags()
runner_flags.define_training_flags()
own_data_flags.define_own_data_flags()


def main(_, distillation=None):
    """Runs the command; `distillation`: None, or run_distill.py's callable that returns the
    `jobs.distillation.Distillation` of a student run (called once TensorFlow has loaded)."""
    if memory_flags.printed_memory_plan(FLAGS):
        return
    bert_config, tokenizer = runner_flags.check_fine_tuning(FLAGS)
    runner_flags.warn_unused_long_input_flags(FLAGS)
    if FLAGS.long_inputs != "windows":
        runner_flags.warn_if_given(FLAGS, ("doc_stride",), "it applies to --long_inputs=windows")
    processor = own_data_flags.classifier_processor(FLAGS)
    glue = is_glue_processor(processor)
    task_name = canonical_task_name(FLAGS.task_name) if glue else FLAGS.task_name
    splits = requested_splits(FLAGS)
    if glue:
        check_input_files(
            FLAGS,
            [
                (path, "data_dir", phase)
                for split, phase in splits
                for path in processor.data_files(FLAGS.data_dir, split)
            ],
        )
    own_data_flags.read_requested_sets(FLAGS, processor, [split for split, _ in splits])
    check_init_checkpoint(FLAGS, bert_config)
    runner_flags.exit_if_dry_run(FLAGS)
    # TensorFlow loads here, once the command line is known to work.
    from jobs.classifier_run import ClassifierRun, run_classifier

    strategy = runner_flags.start_tensorflow(FLAGS)
    run = settings_from_flags(ClassifierRun, FLAGS, task_name=task_name)
    train_config = runner_flags.train_config_from_flags(FLAGS, strategy)
    run_classifier(
        run,
        bert_config,
        processor,
        tokenizer,
        strategy,
        train_config,
        distillation=distillation and distillation(),
    )


if __name__ == "__main__":
    # --task_name and --data_dir: a GLUE task needs both, files of your own neither.
    flags.mark_flags_as_required(["vocab_file", "bert_config_file", "output_dir"])
    run_command(main)
