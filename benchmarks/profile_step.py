"""Where a `benchmarks.train_step` peer's step spends its op time: TensorFlow's profiler,
totals per op type.

    python -m benchmarks.profile_step --peer ours --config mini --mode train
    python -m benchmarks.profile_step --peer model_garden --config mini --mode train
"""

import argparse
import collections
import glob
import os
import tempfile
import time

from benchmarks.common import CONFIGS, bert_config
from benchmarks.peer_models import build_step, make_inputs

PEERS = ("ours", "ours_xla", "keras_hub", "keras_hub_xla", "model_garden", "model_garden_xla")


def op_totals(xplane_path, steps):
    """Sums op durations in an XSpace file.

    Args:
        xplane_path: a `*.xplane.pb` written by tf.profiler.
        steps: traced steps, to report per-step figures.

    Returns:
        (by_type, by_name, counts): Counters of milliseconds per step keyed by op type and by
        (op type, op name), and of events per step keyed by op type.
    """
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    by_type, by_name, counts = collections.Counter(), collections.Counter(), collections.Counter()
    for plane in space.planes:
        metadata = plane.event_metadata
        for line in plane.lines:
            # Op kernels run on the executor's compute threads; other lines are host overhead.
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = metadata[event.metadata_id].name
                if ":" not in name:
                    continue
                op_name, op_type = name.rsplit(":", 1)
                if op_type == "Process":
                    continue
                ms = event.duration_ps / 1e9 / steps
                by_type[op_type] += ms
                by_name[(op_type, op_name)] += ms
                counts[op_type] += 1 / steps
    return by_type, by_name, counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--peer", required=True, choices=PEERS)
    parser.add_argument("--config", default="mini", choices=sorted(CONFIGS))
    parser.add_argument("--mode", default="train", choices=("train", "infer"))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3, help="Traced steps.")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed steps first.")
    parser.add_argument("--top", type=int, default=25, help="Rows per table.")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 1:
        parser.error("--steps and --warmup must be >= 1.")
    # Model Garden runs on tf_keras, the others on Keras 3; chosen before TensorFlow loads.
    os.environ["TF_USE_LEGACY_KERAS"] = "1" if args.peer.startswith("model_garden") else "0"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    config = bert_config(args.config)
    # The inputs of benchmarks.train_step's defaults: sequence 128, 20 predictions.
    call = build_step(
        args.peer, config, args.mode, make_inputs(args.batch, 128, 20, config.vocab_size)
    )

    for _ in range(args.warmup):
        call()
    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        start = time.perf_counter()
        for _ in range(args.steps):
            call()
        wall = (time.perf_counter() - start) / args.steps
        tf.profiler.experimental.stop()
        paths = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
        if not paths:
            raise RuntimeError(f"tf.profiler wrote no *.xplane.pb under {logdir}.")
        by_type, by_name, counts = op_totals(paths[0], args.steps)
    print(f"{args.peer} {args.config} {args.mode} b={args.batch}: {wall * 1000:.1f} ms per step")
    print(f"sum of op time: {sum(by_type.values()):.1f} ms per step")
    print(f"\n{'ms/step':>9}  {'ops/step':>8}  op type")
    for op_type, ms in by_type.most_common(args.top):
        print(f"{ms:9.1f}  {counts[op_type]:8.0f}  {op_type}")
    print(f"\n{'ms/step':>9}  op type: op name")
    for (op_type, op_name), ms in by_name.most_common(args.top):
        print(f"{ms:9.1f}  {op_type}: {op_name}")


if __name__ == "__main__":
    main()
