"""serve.py: an export's answers as JSON over HTTP equal its serving_default signature's
(the oracle: the exported function itself, called with TensorFlow), concurrent requests share
model calls, and bad requests or bad model folders get one sentence."""

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from tests.helpers.scripts import ENV, REPO
from tests.helpers.tiny_exports import write_tiny_exports

# Pairs of mixed lengths (longer than the 24-piece window), empty texts and non-ASCII.
_PAIRS = [
    ("the man went to the market", "a b"),
    ("who went to paris ?", " ".join(["the river"] * 12)),
    ("", ""),
    ("Café zürich, the river.", "東京"),
    ("b", "the man"),
]


def _address(process, log):
    """host:port of serve.py once its start-up line names them."""
    deadline = time.time() + 180
    while time.time() < deadline:
        text = log.read_text()
        if " at http://" in text:
            return text.split(" at http://", 1)[1].split("/v1/predict", 1)[0]
        assert process.poll() is None, text[-3000:]
        time.sleep(0.1)
    raise AssertionError(log.read_text()[-3000:])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tiny exports, and serve.py on the classifier export, started while the others are
    written; it batches over 200 ms so that concurrent requests surely meet."""
    root = tmp_path_factory.mktemp("serve")
    exports = write_tiny_exports(root, ("classifier",))
    log = root / "serve.log"
    process = subprocess.Popen(
        [
            sys.executable,
            os.path.join(REPO, "serve.py"),
            f"--model={exports['classifier']}",
            "--port=0",
            "--batch_timeout_ms=200",
        ],
        cwd=REPO,
        env=ENV,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        exports.update(
            write_tiny_exports(root, ("classifier_bfloat16", "classifier_int8", "ner", "squad"))
        )
        address = _address(process, log)
        yield {"exports": exports, "process": process, "address": address, "log": log}
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def exports(built):
    return built["exports"]


@pytest.fixture(scope="module")
def server(built):
    return built


@pytest.fixture(scope="module")
def classifier_predictor(exports):
    from serving.saved_model_predictor import SavedModelPredictor

    return SavedModelPredictor(exports["classifier"])


def _request(address, method, path, body=None):
    """(status, decoded JSON) of one request; `body` is sent as is if bytes, else as JSON."""
    connection = http.client.HTTPConnection(address, timeout=60)
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode("utf-8")
    connection.request(method, path, body=body)
    response = connection.getresponse()
    payload = json.loads(response.read().decode("utf-8"))
    connection.close()
    return response.status, payload


def _call(signature, **texts):
    """A signature's outputs for lists of strings, as numpy arrays."""
    import tensorflow as tf

    outputs = signature(**{k: tf.constant(v, tf.string) for k, v in texts.items()})
    return {k: v.numpy() for k, v in outputs.items()}


def _signature(export_dir, **texts):
    """The export's serving_default outputs, the export loaded here with TensorFlow."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    return _call(tf.saved_model.load(str(export_dir)).signatures["serving_default"], **texts)


def _assert_same(got, expected):
    """Answers equal: strings and ints exactly, floats within float32 rounding."""
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(b[key], (float, list)) and key not in ("words", "tags"):
                np.testing.assert_allclose(a[key], b[key], atol=1e-5, rtol=0, err_msg=key)
            else:
                assert a[key] == b[key], key


@pytest.mark.slow
def test_answers_over_http_equal_the_signature_and_the_predictor(
    exports, server, classifier_predictor
):
    instances = [{"text_a": a, "text_b": b} for a, b in _PAIRS]
    status, payload = _request(server["address"], "POST", "/v1/predict", {"instances": instances})
    assert status == 200, payload
    oracle = _signature(
        exports["classifier"], text_a=[a for a, _ in _PAIRS], text_b=[b for _, b in _PAIRS]
    )
    expected = [
        {"label": label.decode(), "probabilities": [float(p) for p in probabilities]}
        for label, probabilities in zip(oracle["label"], oracle["probabilities"], strict=True)
    ]
    _assert_same(payload["predictions"], expected)
    assert len({json.dumps(p) for p in payload["predictions"]}) == len(_PAIRS)
    predictor = classifier_predictor
    assert (predictor.task, predictor.precision) == ("classifier", "float32")
    _assert_same(predictor.predict(instances), expected)
    # One instance object answers as "prediction".
    status, single = _request(server["address"], "POST", "/v1/predict", instances[1])
    assert status == 200 and list(single) == ["prediction"]
    _assert_same([single["prediction"]], expected[1:2])
    assert _request(server["address"], "GET", "/v1/health") == (
        200,
        {"status": "ok", "task": "classifier", "precision": "float32"},
    )


@pytest.mark.slow
def test_concurrent_requests_share_model_calls(server, classifier_predictor):
    address = server["address"]
    _, before = _request(address, "GET", "/v1/metadata")
    instances = [
        {"text_a": f"{a} {'the river ' * i}", "text_b": b} for i, (a, b) in enumerate(_PAIRS * 4)
    ][:16]
    answers, start = [None] * 16, threading.Barrier(16)

    def ask(i):
        start.wait()
        answers[i] = _request(address, "POST", "/v1/predict", {"instances": [instances[i]]})

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(status == 200 for status, _ in answers), answers
    # Each request its own answer: the model on that instance alone.
    alone = [classifier_predictor.predict([instance])[0] for instance in instances]
    _assert_same([payload["predictions"][0] for _, payload in answers], alone)
    _, after = _request(address, "GET", "/v1/metadata")
    assert after["max_batch_size"] == 32
    assert after["instance_keys"] == {"required": ["text_a", "text_b"], "optional": []}
    requests = after["stats"]["requests"] - before["stats"]["requests"]
    batches = after["stats"]["batches"] - before["stats"]["batches"]
    assert requests == 16 and batches < 16, (before, after)


@pytest.mark.slow
@pytest.mark.parametrize(
    "body,words",
    [
        (b'{"instances": [{"text_a": "a",', ["not JSON", '"instances"']),
        ({"instances": [{"text_a": "a"}]}, ['"text_b"', "Instance 0"]),
        ({"instances": [{"text_a": "a", "text_b": 3}]}, ['"text_b"', "string"]),
        ({"text_a": "a", "text_b": "b", "label": "1"}, ['"label"', "unknown"]),
        ({"instances": []}, ['"instances"', "non-empty"]),
        ([1, 2], ["JSON list"]),
        # Deeper than Python's recursion limit: the client's error, never the model's.
        (b"[" * 100_000, ["nests arrays or objects too deeply", '"instances"']),
        (b'{"instances": ' * 50_000, ["nests arrays or objects too deeply"]),
        # A number past Python's 4300-digit limit fails the decoder with a plain ValueError.
        (b'{"text_a": "a", "text_b": ' + b"1" * 5000 + b"}", ["not JSON", "digits"]),
    ],
)
def test_a_bad_request_gets_400_and_a_sentence(server, body, words):
    status, payload = _request(server["address"], "POST", "/v1/predict", body)
    assert status == 400, payload
    assert list(payload) == ["error"] and payload["error"].endswith(".")
    for word in words:
        assert word in payload["error"], payload
    # The server still answers.
    status, payload = _request(
        server["address"], "POST", "/v1/predict", {"text_a": "a", "text_b": "b"}
    )
    assert status == 200 and "label" in payload["prediction"]


def _in_process_server(predictor, **settings):
    from serving.http_server import PredictionServer, ServerSettings

    server = PredictionServer(predictor, ServerSettings(port=0, **settings))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.url[len("http://") :]


@pytest.mark.slow
def test_ner_and_squad_answers_equal_the_signature(exports):
    from serving.saved_model_predictor import SavedModelPredictor

    texts = ["the man went to paris", "", "  a  b\tthe river " * 8, "Zürich ?"]
    questions = ["who went ?", "the river", "", "paris"]
    contexts = ["the man went to the market .", " ".join(["the river went to paris"] * 9), "a", ""]
    for name, instances in (
        ("ner", [{"text": t} for t in texts]),
        (
            "squad",
            [{"question": q, "context": c} for q, c in zip(questions, contexts, strict=True)],
        ),
    ):
        predictor = SavedModelPredictor(exports[name])
        assert predictor.task == name and predictor.precision == "float32"
        server, address = _in_process_server(predictor)
        try:
            status, payload = _request(address, "POST", "/v1/predict", {"instances": instances})
        finally:
            server.shutdown()
            server.server_close()
        assert status == 200, payload
        # The signature of the model the predictor loaded: a second load of these exports
        # costs seconds of graph optimisation at its first call (the classifier's test loads
        # its export twice).
        oracle = _call(predictor.signature, **{k: [x[k] for x in instances] for k in instances[0]})
        if name == "ner":
            expected = [
                {
                    "words": [w.decode() for w in words[:n]],
                    "tags": [t.decode() for t in tags[:n]],
                }
                for words, tags, n in zip(
                    oracle["words"], oracle["tags"], oracle["num_words"], strict=True
                )
            ]
            assert [len(e["words"]) for e in expected] == [5, 0, 32, 2]
        else:
            expected = [
                {
                    "answer": oracle["answer"][i].decode(),
                    "start_char": int(oracle["start_char"][i]),
                    "end_char": int(oracle["end_char"][i]),
                    "score": float(oracle["score"][i]),
                }
                for i in range(len(instances))
            ]
            first = expected[0]
            assert contexts[0][first["start_char"] : first["end_char"]] == first["answer"]
        _assert_same(payload["predictions"], expected)


@pytest.mark.slow
def test_a_bfloat16_export_says_so_and_answers_close_to_float32(exports, classifier_predictor):
    from serving.predictor import load_predictor

    instances = [{"text_a": a, "text_b": b} for a, b in _PAIRS]
    bfloat16 = load_predictor(str(exports["classifier_bfloat16"]))
    float32 = classifier_predictor
    assert (bfloat16.task, bfloat16.precision) == ("classifier", "bfloat16")
    got, expected = bfloat16.predict(instances), float32.predict(instances)
    np.testing.assert_allclose(
        [a["probabilities"] for a in got], [a["probabilities"] for a in expected], atol=0.03
    )


@pytest.mark.slow
def test_an_int8_export_answers_over_http_close_to_float32(exports, classifier_predictor):
    from serving.predictor import load_predictor

    instances = [{"text_a": a, "text_b": b} for a, b in _PAIRS]
    int8 = load_predictor(str(exports["classifier_int8"]))
    server, address = _in_process_server(int8)
    try:
        status, payload = _request(address, "POST", "/v1/predict", {"instances": instances})
        health = _request(address, "GET", "/v1/health")
        missing = _request(address, "POST", "/v1/predict", {"text_a": "a"})
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200, payload
    assert health == (200, {"status": "ok", "task": "classifier", "precision": "int8"})
    assert missing[0] == 400 and '"text_b"' in missing[1]["error"]
    _assert_same(payload["predictions"], int8.predict(instances))
    expected = classifier_predictor.predict(instances)
    np.testing.assert_allclose(
        [a["probabilities"] for a in payload["predictions"]],
        [a["probabilities"] for a in expected],
        atol=0.05,
    )


@pytest.mark.slow
def test_a_tflite_export_is_served_without_the_runtime_s_notices(exports, tmp_path):
    """serve.py prints its own lines only; TF_CPP_MIN_LOG_LEVEL=0 brings back the TFLite
    runtime's XNNPACK notice (printed by its C++, which the variable does not reach)."""
    user_env = {k: v for k, v in ENV.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    envs = {"default": user_env, "0": {**user_env, "TF_CPP_MIN_LOG_LEVEL": "0"}}
    logs = {level: tmp_path / f"serve_{level}.log" for level in envs}
    processes = {
        level: subprocess.Popen(
            [
                sys.executable,
                os.path.join(REPO, "serve.py"),
                f"--model={exports['classifier_int8']}",
                "--port=0",
            ],
            cwd=REPO,
            env=env,
            stdout=open(logs[level], "w"),
            stderr=subprocess.STDOUT,
        )
        for level, env in envs.items()
    }
    try:
        for level, process in processes.items():
            address = _address(process, logs[level])
            status, _ = _request(address, "POST", "/v1/predict", {"text_a": "a", "text_b": "b"})
            assert status == 200
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    quiet = logs["default"].read_text().splitlines()
    assert quiet and all(re.match(r"I\d{4} [\d:. ]+ serve_run\.py:\d+\] ", x) for x in quiet), quiet
    assert "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." in logs["0"].read_text()


def test_a_failing_model_gets_500_and_the_server_goes_on():
    class Flaky:
        task, precision = "ner", "float32"

        def predict(self, instances):
            if any(x["text"] == "fail" for x in instances):
                raise RuntimeError("the model broke")
            return [
                {"words": x["text"].split(), "tags": ["O"] * len(x["text"].split())}
                for x in instances
            ]

    server, address = _in_process_server(Flaky(), batch_timeout_ms=300)
    try:
        results = {}
        ask = {
            text: threading.Thread(
                target=lambda t=text: results.update(
                    {t: _request(address, "POST", "/v1/predict", {"text": t})}
                )
            )
            for text in ("fail", "a b", "c")
        }
        for thread in ask.values():
            thread.start()
        for thread in ask.values():
            thread.join()
    finally:
        server.shutdown()
        server.server_close()
    status, payload = results["fail"]
    assert status == 500 and "the model broke" in payload["error"]
    # Its batch's other requests still get their own answers.
    assert results["a b"] == (200, {"prediction": {"words": ["a", "b"], "tags": ["O", "O"]}})
    assert results["c"] == (200, {"prediction": {"words": ["c"], "tags": ["O"]}})


@pytest.mark.slow
def test_a_folder_that_is_no_export_ends_in_one_sentence(exports, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for entry in os.listdir(exports["classifier"]):
        os.symlink(exports["classifier"] / entry, damaged / entry)
    os.unlink(damaged / "saved_model.pb")
    whole = (exports["classifier"] / "saved_model.pb").read_bytes()
    (damaged / "saved_model.pb").write_bytes(whole[: len(whole) // 2])
    cases = {
        empty: f"--model {empty} holds neither saved_model.pb nor model.tflite",
        damaged: f"{damaged / 'saved_model.pb'} is damaged",
        tmp_path / "absent": f"--model {tmp_path / 'absent'} is not a folder",
    }
    runs = {
        folder: subprocess.Popen(
            [sys.executable, os.path.join(REPO, "serve.py"), f"--model={folder}", "--port=0"],
            cwd=REPO,
            env=ENV,
            stderr=subprocess.PIPE,
            text=True,
        )
        for folder in cases
    }
    for folder, words in cases.items():
        _, stderr = runs[folder].communicate(timeout=120)
        last = stderr.strip().splitlines()[-1]
        assert runs[folder].returncode == 1, stderr[-3000:]
        assert last.startswith(f"serve.py: error: {words}"), last
        assert "export_model.py" in last and last.endswith(".")


@pytest.mark.slow
def test_the_predictor_refuses_what_is_no_text_in_export(exports, tmp_path):
    from fileio.errors import UserError
    from serving.saved_model_predictor import SavedModelPredictor

    with pytest.raises(UserError, match=f"^{tmp_path} holds no saved_model.pb, .*export_model"):
        SavedModelPredictor(tmp_path)
    with pytest.raises(UserError, match=f"^The model folder {tmp_path / 'x'} does not exist"):
        SavedModelPredictor(tmp_path / "x")
    # The TF Hub encoder takes ids, not text.
    import tensorflow as tf

    class Ids(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="input_ids")])
        def serve(self, input_ids):
            return {"pooled_output": tf.cast(input_ids, tf.float32)}

    module = Ids()
    tf.saved_model.save(module, str(tmp_path / "ids"), signatures={"serving_default": module.serve})
    with pytest.raises(UserError, match="without text inputs .*'input_ids'"):
        SavedModelPredictor(tmp_path / "ids")


@pytest.mark.slow
def test_sigterm_stops_the_server_cleanly(server):
    process = server["process"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert "Stopped." in open(server["log"]).read()
