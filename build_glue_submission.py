r"""Checks the GLUE leaderboard files of a set of runs and zips them for gluebenchmark.com.

run_classifier.py --do_predict writes one leaderboard file per test set (CoLA.tsv, MNLI-m.tsv,
...). This collects the eleven files from --input_dir or, each found once, its subdirectories,
checks every one against the official test set (header, row count, indices, labels) and writes
the zip. An incomplete or malformed set is refused with one message naming every problem.

Example:

    python build_glue_submission.py --input_dir=/tmp/glue_output \
        --output_file=/tmp/glue_output/submission.zip
"""

from absl import flags, logging

from command_line.tensorflow_logs import log_at_info
from data.glue.submission import OFFICIAL_TEST_SIZES, build_submission
from fileio.errors import run_command

FLAGS = flags.FLAGS

flags.DEFINE_string("input_dir", None, "Directory with the <Task>.tsv leaderboard files.")
flags.DEFINE_string("output_file", None, "The zip to write, e.g. submission.zip.")
flags.DEFINE_bool("allow_partial", False, "Zip the files present even if some are missing.")


def main(_):
    log_at_info(FLAGS)
    names = build_submission(FLAGS.input_dir, FLAGS.output_file, FLAGS.allow_partial)
    logging.info("Wrote %s with %d files: %s.", FLAGS.output_file, len(names), ", ".join(names))
    missing = [name for name in OFFICIAL_TEST_SIZES if name not in names]
    if missing:
        logging.warning("Partial submission; missing: %s.", ", ".join(missing))


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_dir", "output_file"])
    run_command(main)
