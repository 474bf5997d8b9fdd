r"""Creates masked-LM / next-sentence TFRecords from plain text, as the original script does.

Input: one sentence per line, a blank line between documents. With the default
`--num_workers=0` the records are those of Google's original create_pretraining_data.py for
the same flags and seed (same examples, order and files), in byte-reproducible files. With
`--num_workers=N` the corpus is processed in parallel shards and streamed to disk: much faster,
memory independent of the corpus size, the same statistics but not the same records. Use the
fast mode for large corpora and the default to reproduce the original. With `--beam` the
fast mode's work runs as an Apache Beam pipeline (locally, or on Dataflow, Flink or Spark with
`--beam_pipeline_options`) and writes the fast mode's files.

Example:

    python create_pretraining_data.py --input_file=./sample_text.txt \
        --output_file=/tmp/tf_examples.tfrecord --vocab_file=$BERT_BASE_DIR/vocab.txt \
        --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
        --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5
"""

from absl import flags

from command_line.flag_rules import check_flags
from command_line.tensorflow_logs import log_at_info
from data.pretraining.create import create_pretraining_data
from data.pretraining.instances import PretrainingOptions
from fileio.errors import run_command
from training.settings import settings_from_flags

FLAGS = flags.FLAGS

flags.DEFINE_string(
    "input_file", None, "Text file(s): comma-separated paths or glob patterns, read in order."
)
flags.DEFINE_string(
    "output_file", None, "TFRecord file(s), comma-separated; examples are dealt out in turn."
)
flags.DEFINE_string("vocab_file", None, "vocab.txt of the model the data is meant for.")
flags.DEFINE_bool(
    "do_lower_case", True, "Lower-case and strip accents; True for uncased, False for cased models."
)
flags.DEFINE_bool(
    "do_whole_word_mask", False, "Mask all pieces of a word together instead of single pieces."
)
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example, [CLS] and [SEP]s included.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Upper bound on masked tokens per example.")
flags.DEFINE_integer("random_seed", 12345, "Seed of the random generator.")
flags.DEFINE_integer("dupe_factor", 10, "Passes over the input, each with fresh masks and pairs.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Share of tokens to mask.")
flags.DEFINE_float(
    "short_seq_prob", 0.1, "Probability that a document's examples target a random shorter length."
)
flags.DEFINE_integer(
    "num_workers",
    0,
    "0: reproduce the original's records exactly (all instances held until a final shuffle). "
    "N > 0: fast mode with N worker processes, streaming to disk with flat memory; same "
    "statistics, different records.",
)

flags.DEFINE_bool(
    "beam",
    False,
    "Run the fast mode's work as an Apache Beam pipeline (pip install -r requirements-beam.txt "
    "-c constraints-beam.txt): the fast mode's files, on Beam's in-process runner (with "
    "--num_workers processes) or on the runner --beam_pipeline_options names.",
)
flags.DEFINE_string(
    "beam_pipeline_options",
    "",
    "With --beam: Beam's own options, e.g. \"--runner=DataflowRunner --project=P "
    '--region=R --temp_location=gs://B/tmp --setup_file=./setup.py".',
)

flags.DEFINE_integer(
    "output_shards",
    0,
    "0: --output_file lists the output files. N > 0: --output_file is one prefix and the "
    "outputs are its N shards <prefix>-00000-of-0000N ... (as Beam and TFDS name them).",
)


def main(_):
    log_at_info(FLAGS)
    check_flags(FLAGS)
    options = settings_from_flags(PretrainingOptions, FLAGS)
    create_pretraining_data(
        FLAGS.input_file,
        FLAGS.output_file,
        FLAGS.vocab_file,
        options,
        FLAGS.num_workers,
        FLAGS.beam,
        FLAGS.beam_pipeline_options,
        FLAGS.output_shards,
    )


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("output_file")
    flags.mark_flag_as_required("vocab_file")
    run_command(main)
