"""JSON answers over HTTP from any predictor of `serving.predictor.load_predictor`.

* `POST /v1/predict` with `{"instances": [{...}, ...]}` -> `{"predictions": [{...}, ...]}`, or
  with one instance object `{"text_a": ...}` -> `{"prediction": {...}}` (the instances and
  answers of the table in `serving.predictor`).
* `GET /v1/health` -> `{"status": "ok", "task": ..., "precision": ...}`.
* `GET /v1/metadata` -> the task, precision, instance keys, batching settings and `stats`.
* `GET /v1/stats` -> `{"requests": ..., "instances": ..., "batches": ...}` (predict calls).

The instances of concurrent requests run in one predict call (`serving.batcher`). A request
the server cannot read gets 400 and a failure of the model 500, each with
`{"error": "<one sentence>"}`; neither stops the server.
"""

import dataclasses
import http.server
import json

from absl import logging

from fileio.errors import first_line
from serving.batcher import Batcher
from serving.contract import check_instances, instance_shape, keys_of

# Larger bodies are refused before they are read.
MAX_BODY_BYTES = 64 * 1024 * 1024


class BadRequest(ValueError):
    """A request the server cannot answer; the message is the sentence the client gets."""


def read_instances(body, keys):
    """The instances of a request body, and whether it held one instance object.

    Args:
        body: the request's bytes.
        keys: the predictor's `serving.contract.InstanceKeys`.

    Returns:
        (list of instance dicts, single: the body was one instance rather than "instances").

    Raises:
        BadRequest: with the sentence for the client.
    """
    shape = instance_shape(keys)
    try:
        data = json.loads(body.decode("utf-8"))
    except RecursionError:
        # Arrays or objects nested past Python's recursion limit: still the client's body.
        raise BadRequest(
            f"The request body nests arrays or objects too deeply to read: send {shape}."
        ) from None
    except ValueError as err:
        # JSONDecodeError and UnicodeDecodeError, and any other value the decoder refuses.
        raise BadRequest(f"The request body is not JSON ({err}): send {shape}.") from None
    if not isinstance(data, dict):
        raise BadRequest(f"The request body is a JSON {type(data).__name__}: send {shape}.")
    single = "instances" not in data
    instances = [data] if single else data["instances"]
    try:
        check_instances(instances, keys, single)
    except ValueError as err:
        raise BadRequest(str(err)) from None
    return instances, single


@dataclasses.dataclass
class ServerSettings:
    """Where the server listens and how it batches: serve.py's flags of the same names, whose
    defaults these are.

    Attributes:
        host: the address to listen on.
        port: the TCP port (0: any free port).
        max_batch_size: instances per model call at most (`serving.batcher`): the instances of
            concurrent requests share a call up to this many, and a larger request runs in
            calls of this many. An instance is one model call's worth of input whatever its
            windows: a long SQuAD context or a text cut into windows runs all its windows in
            its call.
        batch_timeout_ms: how long a request waits for others to share its call (0: only those
            already waiting).
    """

    host: str = "127.0.0.1"
    port: int = 8080
    max_batch_size: int = 32
    batch_timeout_ms: float = 0.0


class _Handler(http.server.BaseHTTPRequestHandler):
    # Keep-alive connections: a client's requests need no new connection each.
    protocol_version = "HTTP/1.1"
    server_version = "bert-serve"
    # Headers and body go out in two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK of the headers, 40 ms on Linux, on every keep-alive response.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        logging.debug("%s %s", self.address_string(), format % args)

    def _send(self, status, payload):
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 - the base class's name
        app = self.server.app
        path = self.path.split("?")[0].rstrip("/")
        if path == "/v1/health":
            self._send(200, {"status": "ok", "task": app.task, "precision": app.precision})
        elif path == "/v1/metadata":
            self._send(200, app.metadata())
        elif path == "/v1/stats":
            self._send(200, dataclasses.asdict(app.batcher.stats()))
        else:
            self._not_found()

    def do_POST(self):  # noqa: N802 - the base class's name
        path = self.path.split("?")[0].rstrip("/")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(
                400 if length < 0 else 413,
                {
                    "error": f"The request needs a Content-Length header of at most "
                    f"{MAX_BODY_BYTES} bytes (got {self.headers.get('Content-Length')!r}): "
                    "send the JSON body with its length, in several requests if it is larger."
                },
            )
            return
        body = self.rfile.read(length)
        if path != "/v1/predict":
            self._not_found()
            return
        status, payload = self.server.app.answer(body)
        self._send(status, payload)

    def _not_found(self):
        self._send(
            404,
            {
                "error": f"No {self.command} {self.path} here: use POST /v1/predict, GET "
                "/v1/health, GET /v1/metadata or GET /v1/stats."
            },
        )


class _App:
    """What the handlers share: the predictor, its batcher and the instance keys."""

    def __init__(self, predictor, settings):
        self.task, self.precision = predictor.task, predictor.precision
        self.keys = keys_of(predictor)
        self.settings = settings
        self.batcher = Batcher(
            predictor.predict, settings.max_batch_size, settings.batch_timeout_ms / 1000
        )

    def metadata(self):
        return {
            "task": self.task,
            "precision": self.precision,
            "instance_keys": {
                "required": list(self.keys.required),
                "optional": list(self.keys.optional),
            },
            "max_batch_size": self.settings.max_batch_size,
            "batch_timeout_ms": self.settings.batch_timeout_ms,
            "stats": dataclasses.asdict(self.batcher.stats()),
        }

    def answer(self, body):
        """(HTTP status, JSON payload) for a /v1/predict body."""
        try:
            instances, single = read_instances(body, self.keys)
            answers = self.batcher.submit(instances)
        except ValueError as err:
            # BadRequest, or a predictor's own sentence about an instance it cannot take.
            return 400, {"error": str(err)}
        except Exception as err:  # noqa: BLE001 - the server outlives a failing model call
            logging.exception("predict failed")
            return 500, {
                "error": f"The model failed on this request ({type(err).__name__}: "
                f"{first_line(err)}); "
                "the server log has the details: check the instances, or report the failure "
                "with them if they are valid."
            }
        if single:
            return 200, {"prediction": answers[0]}
        return 200, {"predictions": answers}


class PredictionServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server answering a predictor's instances as JSON (module docstring).

    Args:
        predictor: a `serving.contract.Predictor`.
        settings: `ServerSettings` (port 0: any free port; `url` says which).
    """

    daemon_threads = True
    # Concurrent clients connect at once; the default backlog of 5 refuses some.
    request_queue_size = 128

    def __init__(self, predictor, settings):
        self.app = _App(predictor, settings)
        super().__init__((settings.host, settings.port), _Handler)

    @property
    def url(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def server_close(self):
        super().server_close()
        self.app.batcher.close()
