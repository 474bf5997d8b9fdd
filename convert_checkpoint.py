r"""Converts BERT weights between Google's TF1 layout and every other BERT format.

In: tf1, keras (this project's), hf, tf2 (Model Garden), tfhub, keras_hub.
Out: tf1, keras, hf, tfhub, keras_hub. The encoder always; the pretraining heads where both
formats hold them; a fine-tuned classifier, NER or SQuAD head between tf1 and hf (Hugging Face's
BertForSequenceClassification, BertForTokenClassification, BertForQuestionAnswering), with its
class names. Every conversion is strict (one error lists each missing, unexpected or mis-shaped
tensor) and writes its output directory atomically.

Examples:

    # Google's checkpoint -> a Hugging Face folder
    python convert_checkpoint.py --input_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
        --input_format=tf1 --output_dir=bert_base_hf --output_format=hf

    # A run_classifier.py run's fine-tuned model -> BertForSequenceClassification
    python convert_checkpoint.py --input_checkpoint=mrpc_output \
        --input_format=tf1 --output_dir=mrpc_hf --output_format=hf

    # Model Garden's TF2 checkpoint -> Google's layout
    python convert_checkpoint.py --input_checkpoint=tf2_ckpt/ckpt-1 --input_format=tf2 \
        --bert_config_file=bert_config.json --output_dir=bert_tf1 --output_format=tf1
"""

from absl import flags, logging

from command_line.earlier_run import take_settings_of_run
from command_line.tensorflow_logs import log_at_info, quiet_tensorflow_logs
from fileio.errors import run_command
from modeling.formats import INPUT_FORMATS, OUTPUT_FORMATS

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

flags.DEFINE_string(
    "input_checkpoint",
    None,
    "Checkpoint prefix (or the prefix a saver numbered: X finds X-1), or a folder, for tf1 and "
    "tf2; a folder for keras, hf, tfhub, keras_hub.",
)
flags.DEFINE_enum("input_format", "tf1", list(INPUT_FORMATS), "Format of the input.")
flags.DEFINE_string(
    "bert_config_file",
    None,
    "bert_config.json for tf1/tf2 input (default: the one beside it) and for TF Hub "
    "SavedModels that do not carry one.",
)
flags.DEFINE_string("output_dir", None, "Directory to create for the converted files.")
flags.DEFINE_enum("output_format", "keras", list(OUTPUT_FORMATS), "Format of the output.")
flags.DEFINE_bool(
    "do_lower_case",
    True,
    "The model's casing, recorded in hf (tokenizer_config.json), tfhub and keras_hub outputs "
    "(default for a fine-tuning run's checkpoint: the run's, as its flags.txt records it).",
)
flags.DEFINE_bool("overwrite", False, "Replace an existing --output_dir.")
flags.DEFINE_string(
    "task_name",
    None,
    "A fine-tuned classifier's GLUE/XNLI task (e.g. MRPC), naming its classes in an hf output "
    "(default: the run's flags.txt beside the checkpoint).",
)
flags.DEFINE_string(
    "label_file",
    None,
    "A fine-tuned NER model's labels.txt, naming its classes in an hf output (default: the one "
    "beside the checkpoint).",
)


def main(_):
    log_at_info(FLAGS)
    if FLAGS.input_format == "tf1":
        # A cased run converted without the flag would otherwise be written as uncased.
        take_settings_of_run(FLAGS, FLAGS.input_checkpoint, ["do_lower_case"])
    # TensorFlow loads here, once the command line is known to work.
    from jobs.convert_run import ConvertRun, convert

    run = ConvertRun(
        input_checkpoint=FLAGS.input_checkpoint,
        output_dir=FLAGS.output_dir,
        input_format=FLAGS.input_format,
        output_format=FLAGS.output_format,
        bert_config_file=FLAGS.bert_config_file,
        do_lower_case=FLAGS.do_lower_case,
        overwrite=FLAGS.overwrite,
        task_name=FLAGS.task_name,
        label_file=FLAGS.label_file,
    )
    for path in convert(run):
        logging.info("Wrote %s", path)


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_checkpoint", "output_dir"])
    run_command(main)
