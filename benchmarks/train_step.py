"""One BERT pre-training step or encoder call: ours, keras-hub and Model Garden (the `_xla`
peers compiled), on one random batch; see benchmarks/README.md ("Training step").

    python -m benchmarks.train_step --config base --mode train --batch 8 --steps 4 \
        --only ours,keras_hub,model_garden
    python -m benchmarks.train_step --config mini --mode infer --batch 1 --steps 20
"""

import statistics
import time

from benchmarks import harness
from benchmarks.common import CONFIGS, bert_config
from benchmarks.peer_models import build_step, make_inputs

BASELINE = "model_garden"


def peers(args):
    if args.seq_length > 512 or (args.mode == "train" and args.predictions >= args.seq_length):
        raise SystemExit("--seq_length must be at most 512 and --predictions below it.")
    chosen = []
    for suffix in ("", "_xla"):
        for name in ("ours", "keras_hub", "model_garden"):
            # Model Garden runs on tf_keras; the others need Keras 3 even when the caller's
            # environment asks for tf_keras.
            legacy = "1" if name == "model_garden" else "0"
            chosen.append(
                harness.Peer(name + suffix, BASELINE, env={"TF_USE_LEGACY_KERAS": legacy})
            )
    return chosen


def measure(args, peer):
    import numpy as np

    start = time.perf_counter()
    config = bert_config(args.config)
    features = make_inputs(args.batch, args.seq_length, args.predictions, config.vocab_size)
    call = build_step(peer.name, config, args.mode, features)
    build_s = time.perf_counter() - start

    for i in range(args.warmup):
        start = time.perf_counter()
        value = call()
        if i == 0:
            first_call_s = time.perf_counter() - start
            if args.mode == "train" and not np.isfinite(float(value)):
                raise ValueError(f"{peer.name}: the loss of the first step is {float(value)}.")
    times, cpu_times = harness.time_calls(call, args.steps)
    return {
        "step_s": statistics.median(times),
        "cpu_s": statistics.median(cpu_times),
        "first_call_s": first_call_s,
        "build_s": build_s,
        "times": [round(t, 5) for t in times],
        "cpu_times": [round(t, 5) for t in cpu_times],
    }


def _positive(text):
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def add_arguments(parser):
    parser.add_argument("--config", choices=sorted(CONFIGS), default="mini")
    parser.add_argument("--mode", choices=("train", "infer"), default="train")
    parser.add_argument("--batch", type=_positive, default=8, help="Sequences per step.")
    parser.add_argument("--seq_length", type=_positive, default=128)
    parser.add_argument(
        "--predictions", type=_positive, default=20, help="max_predictions_per_seq (train)."
    )
    parser.add_argument("--steps", type=_positive, default=10, help="Timed steps per run.")
    parser.add_argument("--warmup", type=_positive, default=2, help="Untimed steps first.")


METRICS = [harness.seconds("step_s"), harness.seconds("cpu_s", "CPU s")]

if __name__ == "__main__":
    harness.main(__spec__.name)
