"""The optimizer update alone: AdamWeightDecay and LAMB, ours (fused and op by op) against
Model Garden's and keras', on every variable of BERT with both pretraining heads; see
benchmarks/README.md ("Optimizer").

    python -m benchmarks.optimizer --config small --optimizer adamw,lamb --rounds 5
"""

import functools
import json
import math
import os
import statistics
import tempfile

from benchmarks import harness
from benchmarks.common import bert_config
from fileio.atomic import open_atomically

IMPLS = ("ours", "ours_unfused", "model_garden", "keras")
_EXCLUDE = ["LayerNorm", "layer_norm", "bias"]


def variable_specs(config_name):
    """[(TF1 name, shape)] of the pretraining model's trainable variables, worked out once per
    config and run of the benchmark (its process is every measurement's parent)."""
    path = os.path.join(tempfile.gettempdir(), f"bench_specs_{config_name}_{os.getppid()}.json")
    if not os.path.exists(path):
        from training.tasks import PretrainingTask

        task = PretrainingTask(bert_config(config_name))
        task.build_model()
        with open_atomically(path) as f:
            json.dump([(name, list(v.shape)) for name, v in task.variable_map().items()], f)
    with open(path) as f:
        return json.load(f)


def _model_garden_update(optimizer, variables, grads):
    import tensorflow as tf
    from official.nlp.optimization import create_optimizer

    opt = create_optimizer(1e-4, 10000, 100, optimizer_type=optimizer)

    def update():
        # Its AdamWeightDecay clips to global norm 1.0 itself; its LAMB takes no clipping
        # argument, and Model Garden's BERT tasks clip beforehand.
        clipped = grads if optimizer == "adamw" else tf.clip_by_global_norm(grads, 1.0)[0]
        opt.apply_gradients(zip(clipped, variables, strict=True))

    return update


def _keras_update(impl, optimizer, variables, grads, specs):
    import keras

    from modeling.decoupled_decay import DecoupledDecayOptimizer
    from modeling.optimization import create_optimizer

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
        # The same arithmetic op by op inside the step: neither the fused kernel nor XLA.
        opt.update_step = functools.partial(DecoupledDecayOptimizer.update_step, opt)
        opt._compiled_update = opt._update_in_place

    def update():
        opt.apply_gradients(zip(grads, variables, strict=True))

    return update


def measure(args, peer):
    import numpy as np
    import tensorflow as tf

    impl, optimizer = peer.options["impl"], peer.options["optimizer"]
    specs = variable_specs(args.config)
    rng = np.random.default_rng(0)
    values = [rng.normal(0, 0.02, shape).astype(np.float32) for _, shape in specs]
    grads = [tf.constant(rng.normal(0, 1e-3, shape).astype(np.float32)) for _, shape in specs]
    if impl == "model_garden":
        variables = [tf.Variable(v, name=name) for v, (name, _) in zip(values, specs, strict=True)]
        update = _model_garden_update(optimizer, variables, grads)
    else:
        import keras

        variables = [
            keras.Variable(v, name=name.replace("/", "_"))
            for v, (name, _) in zip(values, specs, strict=True)
        ]
        update = _keras_update(impl, optimizer, variables, grads, specs)
    step = tf.function(update)
    for _ in range(args.warmup):
        step()
    variables[0].numpy()
    # Reading a variable waits for the update.
    times, cpu = harness.time_calls(lambda: (step(), variables[-1].numpy()), args.steps)
    return {
        "ms": statistics.median(times) * 1e3,
        "cpu_ms": statistics.median(cpu) * 1e3,
        "params": sum(math.prod(shape) for _, shape in specs),
    }


def peers(args):
    optimizers = args.optimizer.split(",")
    if not set(optimizers) <= {"adamw", "lamb"}:
        raise SystemExit(f"--optimizer: choose from adamw and lamb, not {args.optimizer!r}.")
    chosen = []
    for optimizer in optimizers:
        for impl in IMPLS:
            chosen.append(
                harness.Peer(
                    f"{optimizer}_{impl}",
                    f"{optimizer}_ours",
                    # Model Garden's optimizers are tf_keras ones.
                    env={"TF_USE_LEGACY_KERAS": "1"} if impl == "model_garden" else {},
                    options={"impl": impl, "optimizer": optimizer},
                )
            )
    return chosen


def add_arguments(parser):
    parser.add_argument("--config", default="small", choices=("mini", "small", "base"))
    parser.add_argument("--optimizer", default="adamw,lamb", help="adamw, lamb or both.")
    parser.add_argument("--steps", type=int, default=10, help="Timed updates per run.")
    parser.add_argument("--warmup", type=int, default=3, help="Untimed updates first.")


METRICS = [harness.seconds("ms", "ms"), harness.seconds("cpu_ms", "CPU-ms")]

if __name__ == "__main__":
    harness.main(__spec__.name)
