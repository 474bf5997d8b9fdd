"""The original ``bert.extract_features.main``, writing JSON lines from given activations.

Usage::

    python -m tests.oracles.original_extract_writer --activations A.npz \
        --input_file IN --output_file OUT --vocab_file V --bert_config_file C \
        --max_seq_length S --layers -1,0,-2 [--batch_size B] [other flags of the original]

Every argument but ``--activations`` is a flag of the original script and goes to its own flag
parser. ``A.npz`` holds ``layer_output_<j>``: float32 ``[N, S, H]`` for the j-th index of
``--layers``, row ``u`` being the example whose ``unique_id`` is ``u`` (its input line number).

The original ``main`` runs unchanged: its flags, tokenizer, ``read_examples``,
``convert_examples_to_features``, ``model_fn_builder``, ``input_fn_builder`` and its JSON
writing loop. TF 2 has no ``tf.compat.v1.estimator``, so the module's ``tf`` is replaced by a view
of ``tf.compat.v1`` that adds a TPUEstimator stand-in. The stand-in's ``predict`` runs the
original ``input_fn`` for the order of the examples and yields, for each one, what the
original's ``model_fn`` would predict (``unique_id`` and ``layer_output_<j>``) with values taken
from ``A.npz`` instead of a model, so the output file depends only on the original's writer.
"""

import argparse
import os
import sys
import types

import numpy as np


class _InputPipelineConfig:
    """The one member of ``tf.estimator.tpu.InputPipelineConfig`` that main() reads."""

    PER_HOST_V2 = 3


class _TPUConfig:
    """Keeps main()'s TPU settings; prediction here needs none of them."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs


class _RunConfig:
    """Keeps main()'s run settings; prediction here needs none of them."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs


def _estimator_module(activations):
    """A stand-in for ``tf.compat.v1.estimator`` whose TPUEstimator predicts `activations`."""

    class TPUEstimator:
        """Predicts as the original's model_fn would, with the activations as its outputs."""

        def __init__(self, use_tpu, model_fn, config, predict_batch_size):
            if not callable(model_fn):
                raise TypeError(f"model_fn is not callable: {model_fn!r}")
            self.batch_size = predict_batch_size

        def predict(self, input_fn, yield_single_examples=True):
            if not yield_single_examples:
                raise NotImplementedError("the original predicts single examples")
            # The estimator hands input_fn its batch size through params, as TPUEstimator does.
            for batch in input_fn({"batch_size": self.batch_size}):
                for unique_id in batch["unique_ids"].numpy():
                    result = {"unique_id": unique_id}
                    for name, values in activations.items():
                        result[name] = values[unique_id]
                    yield result

    tpu = types.SimpleNamespace(
        InputPipelineConfig=_InputPipelineConfig,
        RunConfig=_RunConfig,
        TPUConfig=_TPUConfig,
        TPUEstimator=TPUEstimator,
    )
    return types.SimpleNamespace(tpu=tpu)


def _tf_with_estimator(tf1, activations):
    """``tf.compat.v1`` with ``estimator`` added, for the original module's global ``tf``."""
    view = types.ModuleType("tf_compat_v1_with_estimator")
    view.estimator = _estimator_module(activations)
    # Module-level __getattr__ (PEP 562): everything else is tf.compat.v1's own.
    view.__getattr__ = lambda name: getattr(tf1, name)
    return view


def main(argv=None):
    """Runs the original main() on the flags in `argv`, its estimator predicting --activations."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--activations", required=True, help="npz of layer_output_<j> arrays.")
    args, original_argv = parser.parse_known_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

    import tensorflow as tf

    from tests.oracles import contrib_stub

    contrib_stub.install()
    from bert import extract_features

    with np.load(args.activations) as npz:
        activations = {name: npz[name] for name in npz.files}
    for name, values in activations.items():
        if not name.startswith("layer_output_") or values.dtype != np.float32:
            raise ValueError(f"{args.activations}: unexpected {name} of dtype {values.dtype}")
    extract_features.tf = _tf_with_estimator(tf.compat.v1, activations)
    # The original's flags (and its tokenizer's preserve_unused_tokens) live in absl's FLAGS.
    extract_features.FLAGS([sys.argv[0], *original_argv])
    for name in ("input_file", "output_file", "vocab_file", "bert_config_file"):
        if extract_features.FLAGS[name].value is None:
            raise ValueError(f"--{name} is required")
    extract_features.main(None)


if __name__ == "__main__":
    main()
