"""The optimizer update alone: AdamWeightDecay and LAMB over BERT's variables, per peer.

One update is global-norm clipping (1.0) plus the weight update of every trainable variable of
BERT with both pretraining heads (the shapes and TF1 names of `training.tasks.PretrainingTask`'s
model), gradients given. Peers, each in a process of its own, interleaved over `--rounds`:

| impl | AdamW | LAMB |
|---|---|---|
| `ours` | `create_optimizer` (TensorFlow's fused Adam kernel + the decay) | `optimizer_type="lamb"` (each variable one XLA-compiled pass) |
| `ours_unfused` | the same arithmetic, not compiled (one op at a time, as before fusing) | same |
| `model_garden` | `official.nlp.optimization.create_optimizer` (fused `ResourceApplyAdam` + decay) | its `lamb` (legacy LAMB) |
| `keras` | `keras.optimizers.AdamW` (`global_clipnorm=1.0`) | `keras.optimizers.Lamb` |

Every update runs in one `tf.function`; `--warmup` updates are not timed. The driver prints the
median milliseconds per update of each peer and its ratio to `ours`.

    python benchmarks/bench_optimizer.py --driver --config small --optimizer adamw,lamb --rounds 5
"""

import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

IMPLS = ("ours", "ours_unfused", "model_garden", "keras")
_HERE = os.path.dirname(os.path.abspath(__file__))
_EXCLUDE = ["LayerNorm", "layer_norm", "bias"]


def variable_specs(config_name):
    """[(TF1 name, shape)] of the pretraining model's trainable variables."""
    from bench_pretraining_loop import bert_config

    from training.tasks import PretrainingTask

    task = PretrainingTask(bert_config(config_name))
    task.build_model()
    return [(name, list(v.shape)) for name, v in task.variable_map().items()]


def _build(impl, optimizer, specs):
    """The peer's variables, gradients and compiled update."""
    if impl == "model_garden":
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    values = [rng.normal(0, 0.02, shape).astype(np.float32) for _, shape in specs]
    grads = [tf.constant(rng.normal(0, 1e-3, shape).astype(np.float32)) for _, shape in specs]
    if impl == "model_garden":
        from official.nlp.optimization import create_optimizer as mg_create

        variables = [tf.Variable(v, name=name) for v, (name, _) in zip(values, specs, strict=True)]
        opt = mg_create(1e-4, 10000, 100, optimizer_type=optimizer)
        if optimizer == "lamb":
            # Model Garden's LAMB takes no clipping argument; its BERT tasks clip beforehand.
            def update():
                clipped, _ = tf.clip_by_global_norm(grads, 1.0)
                opt.apply_gradients(zip(clipped, variables, strict=True))

        else:  # its AdamWeightDecay clips to global norm 1.0 itself.

            def update():
                opt.apply_gradients(zip(grads, variables, strict=True))

    else:
        import keras

        from modeling.optimization import create_optimizer

        variables = [
            keras.Variable(v, name=name.replace("/", "_"))
            for v, (name, _) in zip(values, specs, strict=True)
        ]
        if impl == "keras":
            kind = keras.optimizers.AdamW if optimizer == "adamw" else keras.optimizers.Lamb
            opt = kind(learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
            opt.exclude_from_weight_decay(var_names=_EXCLUDE)
        else:
            names = {id(v): name for v, (name, _) in zip(variables, specs, strict=True)}
            opt = create_optimizer(1e-4, 10000, 100, optimizer_type=optimizer)
            opt._name_fn = lambda v: names.get(id(v), v.name)
        opt.build(variables)
        if impl == "ours_unfused":
            # The same arithmetic op by op inside the step, as before either was fused.
            from modeling.optimization import _DecoupledDecayOptimizer

            opt.update_step = functools.partial(_DecoupledDecayOptimizer.update_step, opt)
            opt._compiled_update = opt._update_in_place

        def update():
            opt.apply_gradients(zip(grads, variables, strict=True))

    step = tf.function(update)
    return step, variables


def measure(args):
    with open(args.specs) as f:
        specs = json.load(f)
    step, variables = _build(args.impl, args.optimizer, specs)
    for _ in range(args.warmup):
        step()
    variables[0].numpy()
    times, cpu = [], []
    for _ in range(args.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        # Reading a variable waits for the update.
        variables[-1].numpy()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    params = sum(math.prod(s) for _, s in specs)
    print(
        json.dumps(
            {
                "ms": statistics.median(times) * 1e3,
                "cpu_ms": statistics.median(cpu) * 1e3,
                "params": params,
            }
        )
    )


def drive(args):
    specs_path = os.path.join(tempfile.mkdtemp(prefix="bench_optimizer_"), "specs.json")
    with open(specs_path, "w") as f:
        json.dump(variable_specs(args.config), f)
    impls = args.impls.split(",")
    optimizers = args.optimizer.split(",")
    results = {(o, i): [] for o in optimizers for i in impls}
    params = None
    for round_index in range(args.rounds):
        # The order rotates by one each round, so no peer always runs first.
        order = [(o, i) for o in optimizers for i in impls]
        shift = round_index % len(order)
        for optimizer, impl in order[shift:] + order[:shift]:
            cmd = [sys.executable, os.path.abspath(__file__), "--impl", impl]
            cmd += ["--optimizer", optimizer, "--specs", specs_path]
            cmd += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
            out = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if out.returncode:
                raise RuntimeError(f"{impl} {optimizer} failed:\n{out.stderr[-3000:]}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            params = result["params"]
            results[(optimizer, impl)].append(result)
            print(f"round {round_index + 1} {optimizer} {impl}: {result['ms']:.1f} ms", flush=True)
    print(f"\n{args.config}: {params / 1e6:.1f} M parameters, {args.rounds} rounds")
    print("| optimizer | impl | median ms | x ours | CPU ms | x ours | round medians ms |")
    print("|---|---|---|---|---|---|---|")
    for optimizer in optimizers:
        ours = statistics.median(r["ms"] for r in results[(optimizer, "ours")])
        ours_cpu = statistics.median(r["cpu_ms"] for r in results[(optimizer, "ours")])
        for impl in impls:
            rows = results[(optimizer, impl)]
            ms = statistics.median(r["ms"] for r in rows)
            cpu = statistics.median(r["cpu_ms"] for r in rows)
            rounds = ", ".join(f"{r['ms']:.0f}" for r in rows)
            print(
                f"| {optimizer} | {impl} | {ms:.1f} | {ms / ours:.2f} | {cpu:.0f} | "
                f"{cpu / ours_cpu:.2f} | {rounds} |"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--driver", action="store_true")
    parser.add_argument("--config", default="small", choices=("mini", "small", "base"))
    parser.add_argument("--optimizer", default="adamw,lamb")
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--impl", choices=IMPLS)
    parser.add_argument("--specs", help="JSON [(name, shape)] written by the driver.")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(_HERE))
    sys.path.insert(0, _HERE)
    if args.driver:
        drive(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
