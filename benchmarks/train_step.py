"""Times one BERT pretraining step (or a forward pass) of one implementation, in this process.

A training step is forward + backward + optimizer update of BERT with the two pretraining heads:
masked LM on `--predictions` gathered positions per sequence, decoder tied to the word
embeddings, plus next-sentence prediction; fp32, dropout 0.1 on. Inference is the encoder alone
(sequence and pooled output), `training=False`. Inputs are random token ids with no padding.

Peers (each run in a process of its own by `run_benchmarks.py`):

| peer | model | optimizer |
|---|---|---|
| `ours`, `ours_xla` | `modeling.BertPretrainer` + `modeling.losses` | `create_optimizer` |
| `keras_hub`, `keras_hub_xla` | `BertBackbone` + `MaskedLMHead` + Dense(2) NSP | `keras.optimizers.AdamW` |
| `model_garden`, `model_garden_xla` | `BertEncoder` + `BertPretrainerV2` + NSP head | its `AdamWeightDecay` |

The `_xla` peers compile the step with `tf.function(jit_compile=True)`; the others use a plain
`tf.function`. Model Garden runs on tf_keras and needs `TF_USE_LEGACY_KERAS=1` (set here if
missing, before TensorFlow loads).

Prints one JSON line: per-step wall times in seconds after `--warmup` untimed steps (the first
call traces and compiles), their median, the time of the first call and the load average.

    python benchmarks/bench_train_step.py --peer ours --config mini --mode train --batch 8
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
from train_step_models import (  # benchmarks/ is on sys.path when run as a script
    CONFIGS,
    MAX_POSITIONS,
    PEERS,
    build_keras_hub,
    build_model_garden,
    build_ours,
    make_inputs,
)


def run(peer, config, mode, batch, seq_length, predictions, steps, warmup):
    """Builds the peer's step, runs `warmup` untimed calls, then times `steps` calls.

    Returns:
        dict ready for JSON: the arguments plus `times` (wall seconds per step), `median`,
        `cpu_times` (process CPU seconds per step), `first_call_s`, `build_s` and the load
        average before and after.
    """
    load_before = os.getloadavg()
    start = time.perf_counter()
    base_peer = peer.removesuffix("_xla")
    builders = {
        "ours": build_ours,
        "keras_hub": build_keras_hub,
        "model_garden": build_model_garden,
    }
    features = make_inputs(batch, seq_length, predictions)
    step = builders[base_peer](CONFIGS[config], mode, peer.endswith("_xla"), features)
    build_s = time.perf_counter() - start

    def call():
        # Materialising a result waits for the whole step; outputs are small.
        result = step()
        first = result[1] if isinstance(result, tuple) else result
        first.numpy()
        return result

    first_call_s = None
    for i in range(warmup):
        t0 = time.perf_counter()
        value = call()
        if i == 0:
            first_call_s = time.perf_counter() - t0
            if mode == "train" and not np.isfinite(float(value.numpy())):
                raise ValueError(f"{peer}: the loss of the first step is {float(value)}.")
    times, cpu_times = [], []
    for _ in range(steps):
        c0, t0 = time.process_time(), time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    return {
        "peer": peer,
        "config": config,
        "mode": mode,
        "batch": batch,
        "seq_length": seq_length,
        "predictions": predictions if mode == "train" else 0,
        "warmup": warmup,
        "times": [round(t, 5) for t in times],
        "median": round(statistics.median(times), 5),
        # CPU seconds of this process per step: less sensitive than wall time to other load.
        "cpu_times": [round(t, 5) for t in cpu_times],
        "first_call_s": None if first_call_s is None else round(first_call_s, 3),
        "build_s": round(build_s, 3),
        "loadavg_before": [round(v, 2) for v in load_before],
        "loadavg_after": [round(v, 2) for v in os.getloadavg()],
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--peer", required=True, choices=PEERS)
    parser.add_argument("--config", default="mini", choices=sorted(CONFIGS))
    parser.add_argument("--mode", default="train", choices=("train", "infer"))
    parser.add_argument("--batch", type=int, default=8, help="Sequences per step.")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument(
        "--predictions", type=int, default=20, help="max_predictions_per_seq (train only)."
    )
    parser.add_argument("--steps", type=int, default=10, help="Timed steps.")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed steps first (>= 1).")
    args = parser.parse_args(argv)
    for name in ("batch", "seq_length", "steps", "warmup"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}.")
    if args.mode == "train" and not 1 <= args.predictions < args.seq_length:
        parser.error(
            f"--predictions must be in [1, seq_length) = [1, {args.seq_length}), "
            f"got {args.predictions}."
        )
    if args.seq_length > MAX_POSITIONS:
        parser.error(f"--seq_length must be <= {MAX_POSITIONS}, got {args.seq_length}.")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.peer.startswith("model_garden"):
        # Model Garden is built on tf_keras; this must be set before TensorFlow is imported.
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # The project's packages live one directory up.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = run(
        args.peer,
        args.config,
        args.mode,
        args.batch,
        args.seq_length,
        args.predictions,
        args.steps,
        args.warmup,
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
