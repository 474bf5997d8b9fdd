r"""Answers of an exported model as JSON over HTTP, for any language:

    python export_model.py --task=classifier --task_name=MRPC --checkpoint=/tmp/mrpc_output \
        --bert_config_file=$BERT_BASE_DIR/bert_config.json \
        --vocab_file=$BERT_BASE_DIR/vocab.txt --export_dir=/tmp/mrpc_model
    python serve.py --model=/tmp/mrpc_model --port=8080
    curl -s localhost:8080/v1/predict \
        -d '{"instances": [{"text_a": "He went home.", "text_b": "He walked home."}]}'

`--model` is a folder export_model.py wrote: a text-in SavedModel (--task=classifier, ner or
squad; float32 or bfloat16) or a TFLite export (int8). POST /v1/predict answers instances
(`{"instances": [...]}` or one instance object); GET /v1/health and /v1/metadata describe the
model. Concurrent requests run as one batch of up to --max_batch_size instances: those that
arrived while the model was busy, and more for up to --batch_timeout_ms. It listens on 127.0.0.1 unless --host says otherwise and stops
cleanly on SIGTERM or Ctrl-C. See docs/serving.md.
"""

import os

from absl import flags

from command_line.flag_rules import check_flags
from command_line.tensorflow_logs import quiet_tensorflow_logs
from fileio.errors import UserError, run_command
from serving.http_server import ServerSettings

FLAGS = flags.FLAGS
quiet_tensorflow_logs()

flags.DEFINE_string(
    "model",
    None,
    "The export to serve: the --export_dir of export_model.py (a text-in SavedModel of "
    "--task=classifier, ner or squad, or a TFLite export).",
)
# The defaults are ServerSettings' own: one home per setting.
flags.DEFINE_string(
    "host",
    ServerSettings.host,
    "Address to listen on; 127.0.0.1 answers this machine only, 0.0.0.0 every network.",
)
flags.DEFINE_integer("port", ServerSettings.port, "TCP port to listen on (0: any free port).")
flags.DEFINE_integer(
    "max_batch_size",
    ServerSettings.max_batch_size,
    "Instances of concurrent requests run in one model call, at most this many; a larger "
    "request runs in calls of this many. It counts instances, not windows: an instance cut "
    "into windows (a long SQuAD context, a text past --max_seq_length) runs all of them in its "
    "call.",
)
flags.DEFINE_float(
    "batch_timeout_ms",
    ServerSettings.batch_timeout_ms,
    "How long a request waits for others to share its model call (milliseconds; 0: only "
    "those already waiting).",
)
flags.DEFINE_integer(
    "num_threads",
    None,
    "CPU threads for the model (default: the runtime's, all cores).",
)


def main(_):
    check_flags(FLAGS)
    model = FLAGS.model
    # Before TensorFlow loads, a local path that holds no export fails at once.
    if "://" not in model and not os.path.isdir(model):
        raise UserError(
            f"--model {model} is not a folder: pass the --export_dir that export_model.py wrote."
        )
    if "://" not in model and not any(
        os.path.isfile(os.path.join(model, name)) for name in ("saved_model.pb", "model.tflite")
    ):
        raise UserError(
            f"--model {model} holds neither saved_model.pb nor model.tflite, so it is no "
            "export: pass the --export_dir that export_model.py wrote."
        )
    from jobs.serve_run import serve

    settings = ServerSettings(
        host=FLAGS.host,
        port=FLAGS.port,
        max_batch_size=FLAGS.max_batch_size,
        batch_timeout_ms=FLAGS.batch_timeout_ms,
    )
    serve(model, settings, num_threads=FLAGS.num_threads)


if __name__ == "__main__":
    flags.mark_flags_as_required(["model"])
    run_command(main)
