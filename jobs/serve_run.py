"""serve.py's job: an export's answers over HTTP until SIGTERM or SIGINT (see serving/)."""

import signal
import threading

from absl import logging

from fileio.errors import UserError
from serving.http_server import PredictionServer
from serving.predictor import load_predictor


def serve(model_dir, settings, num_threads=None, on_ready=None):
    """Loads the export in `model_dir` and answers over HTTP until SIGTERM or SIGINT.

    Args:
        model_dir: a folder export_model.py wrote (a text-in SavedModel or a TFLite export).
        settings: `serving.http_server.ServerSettings`.
        num_threads: CPU threads for the model (None: the runtime's default).
        on_ready: called with the server once it listens (tests, benchmarks).

    Raises:
        UserError: `model_dir` is not an export, its files are damaged, or the port cannot
            be bound.
    """
    predictor = load_predictor(model_dir, num_threads=num_threads)
    try:
        server = PredictionServer(predictor, settings)
    except OSError as err:
        raise UserError(
            f"Cannot listen on {settings.host}:{settings.port} ({err.strerror}): pass another "
            "--port (or stop what uses it), or a --host of this machine."
        ) from None

    def stop(signum, _):
        logging.info("%s: stopping.", signal.Signals(signum).name)
        # shutdown() waits for serve_forever, which runs in this (the main) thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    logging.info(
        "Serving the %s model %s (%s) at %s/v1/predict (max_batch_size=%d, batch_timeout_ms=%g).",
        predictor.task,
        model_dir,
        predictor.precision,
        server.url,
        settings.max_batch_size,
        settings.batch_timeout_ms,
    )
    if on_ready is not None:
        on_ready(server)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        for s, handler in previous.items():
            signal.signal(s, handler)
    logging.info("Stopped.")
