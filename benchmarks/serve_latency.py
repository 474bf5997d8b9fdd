"""serve.py's latency and throughput under concurrent clients: `batched` (--max_batch_size,
--batch_timeout_ms) against `unbatched` (one instance per model call); p50/p90/p99 latency and
requests per second, and the seconds serve.py takes from its start until it listens with the
model loaded (a TFLite export's starts without TensorFlow). See benchmarks/README.md
("serve.py latency").

    python -m benchmarks.serve_latency --model=/tmp/mrpc_model --concurrency=8 \
        --requests=400 --sentences=sentences.txt
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from benchmarks import harness

METRICS = [
    harness.seconds("p50_ms", "ms"),
    harness.seconds("p90_ms", "ms"),
    harness.seconds("p99_ms", "ms"),
    harness.rate("requests_per_s", "requests/s"),
    harness.seconds("start_s", "s to listen"),
]


def add_arguments(parser):
    parser.add_argument("--model", required=True, help="The export serve.py serves.")
    parser.add_argument("--sentences", required=True, help="A text file, one sentence a line.")
    parser.add_argument("--concurrency", type=int, default=8, help="Client threads.")
    parser.add_argument("--requests", type=int, default=400, help="Requests in all.")
    parser.add_argument("--warmup", type=int, default=16, help="Requests before timing.")
    parser.add_argument("--max_batch_size", type=int, default=32, help="The batched peer's.")
    parser.add_argument("--batch_timeout_ms", type=float, default=0.0, help="The batched peer's.")
    parser.add_argument("--num_threads", type=int, default=None, help="serve.py --num_threads.")
    parser.add_argument("--json", action="store_true", help="Print the summary as JSON too.")


def peers(args):
    return [
        harness.Peer("unbatched", options={"max_batch_size": 1, "batch_timeout_ms": 0}),
        harness.Peer(
            "batched",
            baseline="unbatched",
            options={
                "max_batch_size": args.max_batch_size,
                "batch_timeout_ms": args.batch_timeout_ms,
            },
        ),
    ]


def _instances(path, keys, count):
    """`count` instances cycling through the file's lines, in the export's keys."""
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    if not lines:
        raise ValueError(f"--sentences {path} has no sentences: give a file of one per line.")
    instances = []
    for i in range(count):
        line, following = lines[i % len(lines)], lines[(i + 1) % len(lines)]
        if "question" in keys:
            instances.append({"question": " ".join(line.split()[:6]), "context": line})
        else:
            instance = {keys[0]: line}
            if "text_b" in keys:
                instance["text_b"] = following
            instances.append(instance)
    return instances


def _start(args, options, log):
    command = [sys.executable, "serve.py", f"--model={args.model}", "--port=0"]
    command += harness.flags(**options, num_threads=args.num_threads or None)
    process = harness.start_process(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 600
    while time.time() < deadline:
        with open(log.name, encoding="utf-8") as f:
            text = f.read()
        if " at http://" in text:
            return process, text.split(" at http://", 1)[1].split("/v1/predict", 1)[0]
        if process.poll() is not None:
            raise RuntimeError(f"serve.py failed:\n{text[-3000:]}")
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("serve.py did not start within 600 s.")


def _get(address, path):
    connection = http.client.HTTPConnection(address, timeout=60)
    connection.request("GET", path)
    try:
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def _client(address, bodies, latencies, errors):
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=600)
    for body in bodies:
        start = time.perf_counter()
        connection.request("POST", "/v1/predict", body=body)
        response = connection.getresponse()
        response.read()
        latencies.append(time.perf_counter() - start)
        if response.status != 200:
            errors.append(response.status)
    connection.close()


def _run_clients(address, bodies, concurrency):
    """Latencies (s) of every request, and the wall time of all, `concurrency` clients."""
    latencies, errors = [], []
    threads = [
        threading.Thread(target=_client, args=(address, bodies[i::concurrency], latencies, errors))
        for i in range(concurrency)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed (HTTP {sorted(set(errors))}).")
    return sorted(latencies), wall


def _percentile(values, q):
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def measure(args, peer):
    started = time.perf_counter()
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as log:
        process, address = _start(args, peer.options, log)
    start_s = time.perf_counter() - started
    try:
        metadata = _get(address, "/v1/metadata")
        keys = metadata["instance_keys"]["required"]
        instances = _instances(args.sentences, keys, args.warmup + args.requests)
        bodies = [json.dumps(x).encode("utf-8") for x in instances]
        _run_clients(address, bodies[: args.warmup], args.concurrency)
        before = _get(address, "/v1/stats")
        latencies, wall = _run_clients(address, bodies[args.warmup :], args.concurrency)
        after = _get(address, "/v1/stats")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        os.unlink(log.name)
    batches = after["batches"] - before["batches"]
    return {
        "p50_ms": 1000 * _percentile(latencies, 50),
        "p90_ms": 1000 * _percentile(latencies, 90),
        "p99_ms": 1000 * _percentile(latencies, 99),
        "requests_per_s": len(latencies) / wall,
        "start_s": start_s,
        "mean_batch": (after["instances"] - before["instances"]) / max(batches, 1),
        "task": metadata["task"],
        "precision": metadata["precision"],
    }


def after(args, rows, machine):
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    harness.main(__spec__.name)
