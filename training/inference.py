"""Batched inference under a strategy: the one path for evaluation, prediction and extraction.

`Trainer.predict` (classifier, NER and SQuAD evaluation and prediction) and extract_features.py
both run a compiled forward step over a finite dataset with `predictions`; the first collects
the outputs, the second streams them to its output file batch by batch, the model running
ahead on a thread of its own (`ahead`) while the lines are written.

Padding examples (`is_real_example` 0: the filling of a last batch padded to a whole one, see
`training.distributed_input`) produce no output row, and examples sorted by length for batching
(`example_index`) come back in input order, so every output holds one row per real example, in
input order. Batches cut to a length bucket give per-token outputs of that length; `collect`
pads them to the longest with zeros (positions past an example's real length mean nothing).
"""

import queue
import threading

import numpy as np
import tensorflow as tf

from training.distributed_input import num_workers

# Carry the padding mask and the input position from the features to `predictions`.
_REAL = "_is_real_example"
_INDEX = "_example_index"


def make_predict_step(strategy, outputs_fn, use_xla=False):
    """Compiles `outputs_fn` as one inference step over a global batch.

    With several workers each replica's outputs are gathered from all replicas (in replica
    order, which is the order of the global batch), so every worker, the chief included, gets
    the whole batch.

    Args:
        strategy: a `tf.distribute.Strategy`.
        outputs_fn: `features -> dict of [batch, ...] tensors`, run on each replica.
        use_xla: compile the replica's computation with XLA (once per batch shape: the full
            batches and a short last one).

    Returns:
        A function `global batch -> dict of [global batch, ...] tensors`.
    """
    model_fn = tf.function(outputs_fn, jit_compile=True) if use_xla else outputs_fn
    gather = num_workers(strategy) > 1

    def replica_fn(features):
        outputs = dict(model_fn(features))
        if "is_real_example" in features:
            outputs[_REAL] = tf.reshape(features["is_real_example"], [-1])
        if "example_index" in features:
            # An op of this replica (not the input tensor itself), so that it has the
            # replica's device, which the cross-worker gather needs.
            outputs[_INDEX] = tf.identity(features["example_index"])
        if gather:
            context = tf.distribute.get_replica_context()
            outputs = {k: context.all_gather(v, axis=0) for k, v in outputs.items()}
        return outputs

    # `predictions` traces it once for the iterator's element spec (lengths left open), which
    # serves every batch; XLA compiles the replica's computation per shape it meets.
    @tf.function
    def predict_step(batch):
        per_replica = strategy.run(replica_fn, args=(batch,))
        local = strategy.experimental_local_results
        if gather:
            return {name: local(value)[0] for name, value in per_replica.items()}
        return {name: tf.concat(local(value), axis=0) for name, value in per_replica.items()}

    return predict_step


def predictions(predict_step, batches, progress=None):
    """Runs `predict_step` over every batch of a finite iterator, in order.

    Args:
        predict_step: from `make_predict_step`.
        batches: e.g. `training.distributed_input.inference_batches(...)`.
        progress: a `training.summaries.InferenceProgress` counting the examples, or None.

    Yields:
        dict name -> np.ndarray `[batch, ...]` per batch, padding examples left out; with
        `example_index` (sorted input) in the order of the batches, not of the input (see
        `in_input_order`).
    """
    spec = getattr(batches, "element_spec", None)
    if spec is not None:
        # One trace for all the cut lengths, instead of one for the first batch's length and
        # one more when a second length comes (each costs about as much as predicting a few
        # hundred short examples).
        predict_step.get_concrete_function(spec)
    for batch in batches:
        outputs = {name: value.numpy() for name, value in predict_step(batch).items()}
        real = outputs.pop(_REAL, None)
        if real is not None and not real.all():
            outputs = {name: value[real > 0] for name, value in outputs.items()}
        if progress is not None:
            progress.update(len(next(iter(outputs.values()))) if outputs else 0)
        yield outputs
    if progress is not None:
        progress.finish()


def _concatenate(parts):
    """Concatenates along the batch axis, zero-padding the other axes to the largest."""
    shape = np.max([p.shape for p in parts], axis=0)
    padded = [
        np.pad(p, [(0, 0)] + [(0, int(n - m)) for n, m in zip(shape[1:], p.shape[1:], strict=True)])
        for p in parts
    ]
    return np.concatenate(padded)


def collect(batches):
    """Concatenates the per-batch outputs of `predictions`: dict name -> np.ndarray [N, ...],
    rows in input order."""
    collected = {}
    for outputs in batches:
        for name, value in outputs.items():
            collected.setdefault(name, []).append(value)
    result = {name: _concatenate(parts) for name, parts in collected.items()}
    index = result.pop(_INDEX, None)
    if index is not None:
        order = np.argsort(index, kind="stable")
        result = {name: value[order] for name, value in result.items()}
    return result


def in_input_order(batches):
    """Rows of `predictions`' batches, one dict name -> np.ndarray per example, in input order.

    Sorted input is put back in order as it streams: only rows that arrive before their turn
    wait (at most a sorting window of them).
    """
    waiting, turn, offset = {}, 0, 0
    for outputs in batches:
        index = outputs.pop(_INDEX, None)
        count = len(next(iter(outputs.values())))
        keys = range(offset, offset + count) if index is None else index.tolist()
        offset += count
        for row, key in enumerate(keys):
            waiting[key] = {name: value[row] for name, value in outputs.items()}
        while turn in waiting:
            yield waiting.pop(turn)
            turn += 1
    if waiting:
        raise RuntimeError(f"The outputs of {len(waiting)} examples arrived without their turn.")


def ahead(items, depth=2):
    """Yields the items of an iterator that a thread of its own reads, up to `depth` ahead.

    The model's step lets go of Python's lock while it runs, so what the caller does with one
    batch (extract_features formats and writes its JSON lines) overlaps the computation of the
    next. An exception raised while reading is raised here; when the caller stops early, the
    thread stops after the item it is computing.
    """
    pending = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def put(entry):
        while not stop.is_set():
            try:
                pending.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read():
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((end, None))
        except BaseException as error:  # noqa: BLE001  (handed to the caller's thread)
            put((end, error))

    thread = threading.Thread(target=read, name="predictions_ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = pending.get()
            if error is not None:
                raise error
            if item is end:
                return
            yield item
    finally:
        stop.set()
        thread.join()
