"""Model Garden's LAMB optimizer applied to given gradients.

Usage::

    python -m tests.oracles.model_garden_lamb --problem IN.npz --out OUT.npz \
        --learning_rate LR --weight_decay_rate WD --exclude LayerNorm,bias

``IN.npz`` holds ``init/<name>`` (float32 arrays, the variables' initial values under their
checkpoint names, e.g. ``dense/kernel``) and ``grad/<step>/<name>`` for steps 0, 1, ...
``official.modeling.optimization.lamb.LAMB`` (a tf_keras optimizer) applies each step's
gradients in order; ``OUT.npz`` holds every variable's final value under its name. Variables
whose name matches an ``--exclude`` pattern get neither weight decay nor layer adaptation.

Must run with ``TF_USE_LEGACY_KERAS=1`` (set here if missing).
"""

import argparse
import os

import numpy as np


def main(argv=None):
    """Runs Model Garden's LAMB on `--problem` and writes `--out`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--problem", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--learning_rate", type=float, required=True)
    parser.add_argument("--weight_decay_rate", type=float, required=True)
    parser.add_argument("--exclude", default="", help="Comma-separated regular expressions.")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import tensorflow as tf
    from official.modeling.optimization.lamb import LAMB

    with np.load(args.problem) as npz:
        problem = {name: npz[name] for name in npz.files}
    names = sorted(k[len("init/") :] for k in problem if k.startswith("init/"))
    steps = len({k.split("/")[1] for k in problem if k.startswith("grad/")})
    # The variable's name is what LAMB matches the patterns against.
    variables = [tf.Variable(problem[f"init/{n}"], name=n) for n in names]
    optimizer = LAMB(
        learning_rate=args.learning_rate,
        weight_decay_rate=args.weight_decay_rate,
        exclude_from_weight_decay=[p for p in args.exclude.split(",") if p],
    )
    for step in range(steps):
        grads = [tf.constant(problem[f"grad/{step}/{n}"]) for n in names]
        optimizer.apply_gradients(zip(grads, variables, strict=True))
    np.savez(args.out, **{n: v.numpy() for n, v in zip(names, variables, strict=True)})


if __name__ == "__main__":
    main()
