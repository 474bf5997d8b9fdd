"""Converts BERT weights between Google's TF1 layout, this project's Keras format and HF format.

Examples:

    # Google's checkpoint -> Keras 3 weights
    python convert_checkpoint.py --input_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
        --input_format=tf1 --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
        --output_dir=keras_base --output_format=keras

    # Hugging Face folder (config.json + model.safetensors) -> Google's layout
    python convert_checkpoint.py --input_checkpoint=all-MiniLM-L6-v2 --input_format=hf \
        --output_dir=minilm_tf1 --output_format=tf1
"""

import os

# Before TensorFlow loads: no C++ start-up notices (CPU features, oneDNN, and on machines without
# a GPU driver the failed CUDA start) unless TF_CPP_MIN_LOG_LEVEL asks for them.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if os.path.exists("/proc/driver/nvidia") else "3")

from absl import app, flags, logging

from modeling import conversion
from training.settings import log_at_info

FLAGS = flags.FLAGS

flags.DEFINE_string(
    "input_checkpoint", None, "Checkpoint prefix or directory (tf1), or directory (keras, hf)."
)
flags.DEFINE_enum("input_format", "tf1", list(conversion.FORMATS), "Format of the input.")
flags.DEFINE_string(
    "bert_config_file", None, "bert_config.json for tf1 input (default: the one beside it)."
)
flags.DEFINE_string("output_dir", None, "Directory for the converted files.")
flags.DEFINE_enum("output_format", "keras", ["tf1", "keras"], "Format of the output.")


def main(_):
    log_at_info(FLAGS)
    config, arrays, vocab = conversion.read_weights(
        FLAGS.input_checkpoint, FLAGS.input_format, FLAGS.bert_config_file
    )
    logging.info(
        "Read %d tensors (%s heads) from %s",
        len(arrays),
        "with" if any(n.startswith("cls/") for n in arrays) else "no",
        FLAGS.input_checkpoint,
    )
    written = conversion.write_weights(FLAGS.output_dir, FLAGS.output_format, config, arrays, vocab)
    for path in written:
        logging.info("Wrote %s", path)


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_checkpoint", "output_dir"])
    app.run(main)
