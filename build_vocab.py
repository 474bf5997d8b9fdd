r"""Learns a WordPiece vocab.txt (Google's layout) from raw text, for pre-training from scratch.

The text is split into words exactly as `FullTokenizer` will split it (same --do_lower_case), and
the file loads directly in `FullTokenizer` and `create_pretraining_data.py`. The [UNK] rate of the
training text under the new vocabulary is logged at the end.

Example:

    python build_vocab.py --input_file='corpus/*.txt' --output_file=my_model/vocab.txt \
        --vocab_size=30522 --do_lower_case=True

Set `vocab_size` in bert_config.json to the number of lines written (the requested size unless
the corpus is too small, which is logged).
"""

from absl import flags

from command_line.flag_rules import check_flags
from command_line.tensorflow_logs import log_at_info, quiet_tensorflow_logs
from fileio.errors import run_command

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

flags.DEFINE_string("input_file", None, "Comma-separated globs of text files (one text per line).")
flags.DEFINE_string("output_file", None, "The vocab.txt to write.")
flags.DEFINE_integer("vocab_size", 30522, "Lines of the vocabulary, reserved tokens included.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (uncased model).")
flags.DEFINE_integer("min_count", 1, "Characters and pieces seen fewer times are left out.")
flags.DEFINE_integer("max_chars", 0, "Keep only this many most frequent characters (0: all).")
flags.DEFINE_integer("max_input_lines", 0, "Read at most this many lines (0: all).")
flags.DEFINE_integer("num_unused", 994, "Number of [unusedN] slots (Google's: 994).")
flags.DEFINE_list(
    "special_token_ids",
    ["0", "100", "101", "102", "103"],
    "Ids of [PAD],[UNK],[CLS],[SEP],[MASK] (Google's: 0,100,101,102,103).",
)
flags.DEFINE_integer("num_iterations", 4, "Rounds of the WordPiece learner.")
flags.DEFINE_integer("max_token_chars", 32, "Longest learned piece, in characters.")
flags.DEFINE_float("progress_interval_s", 10.0, "Seconds between progress lines while reading.")


def _five_integers(values):
    return len(values) == 5 and all(v.strip().lstrip("-").isdigit() for v in values)


flags.register_validator(
    "special_token_ids",
    _five_integers,
    "--special_token_ids must be five comma-separated integers: the ids of [PAD],[UNK],[CLS],"
    "[SEP],[MASK] (Google's: 0,100,101,102,103).",
)


def main(_):
    log_at_info(FLAGS)
    check_flags(FLAGS)
    pad, unk, cls, sep, mask = (int(v) for v in FLAGS.special_token_ids)
    # TensorFlow loads here, once the command line is known to work.
    from data.tokenization import vocab_builder

    layout = vocab_builder.VocabLayout(pad, unk, cls, sep, mask, num_unused=FLAGS.num_unused)
    vocab_builder.build_vocab_file(
        FLAGS.input_file,
        FLAGS.output_file,
        FLAGS.vocab_size,
        do_lower_case=FLAGS.do_lower_case,
        layout=layout,
        min_count=FLAGS.min_count,
        max_chars=FLAGS.max_chars,
        max_input_lines=FLAGS.max_input_lines,
        num_iterations=FLAGS.num_iterations,
        max_token_chars=FLAGS.max_token_chars,
        progress_interval_s=FLAGS.progress_interval_s,
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "output_file"])
    run_command(main)
