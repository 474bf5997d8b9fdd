"""Forms of the training step's matrix products on this CPU, timed side by side in one process.

The bare training step spends about three quarters of its op time in matrix products (see
"Where the time goes" in benchmarks/README.md), the same products in this project, keras-hub
and Model Garden. This measures two ways of doing that work differently that change no result
beyond float rounding:

- `dx`: the input gradient of a dense layer, `dy [M, out] x kernel^T`. TensorFlow's gradient of
  `MatMul` (and Keras' `Dense`) passes the kernel with `transpose_b=True`; the alternative
  transposes the kernel first (a non-constant permutation, so that grappler cannot fold the
  transpose back into the product) and multiplies plainly. The transpose is inside the timing.
- `qkv`: the query, key and value projections of self-attention as three products, forward and
  backward, against one product with the three kernels concatenated (`[H, 3H]`), its output
  split; the concatenation and the split are inside the timing.

Every form is one `tf.function`; the forms alternate over `--repeats` rounds of `--calls` calls
each, and the table gives the median milliseconds per call and the ratio to the first form:

    python benchmarks/bench_matmul_forms.py --repeats 15
"""

import argparse
import statistics
import time

import tensorflow as tf

_TOKENS = 8 * 128  # batch 8, sequence 128: the bare training step's rows.


def _dx_forms(in_size, out_size):
    kernel = tf.Variable(tf.random.normal([in_size, out_size]))
    dy = tf.random.normal([_TOKENS, out_size])
    # Read at run time, so the transpose stays a transpose.
    perm = tf.Variable([1, 0])
    return {
        "transpose_b flag (TensorFlow's gradient)": lambda: tf.matmul(dy, kernel, transpose_b=True),
        "kernel transposed, then plain": lambda: tf.matmul(dy, tf.transpose(kernel, perm)),
    }


def _qkv_forms(hidden):
    x = tf.random.normal([8, 128, hidden])
    kernels = [tf.Variable(tf.random.normal([hidden, hidden]) * 0.02) for _ in range(3)]
    biases = [tf.Variable(tf.zeros([hidden])) for _ in range(3)]
    upstream = [tf.random.normal([8, 128, hidden]) for _ in range(3)]

    def separate(x):
        flat = tf.reshape(x, [-1, hidden])
        return [tf.matmul(flat, k) + b for k, b in zip(kernels, biases, strict=True)]

    def fused(x):
        flat = tf.reshape(x, [-1, hidden])
        joint = tf.matmul(flat, tf.concat(kernels, axis=1)) + tf.concat(biases, axis=0)
        return tf.split(joint, 3, axis=-1)

    def step(project):
        with tf.GradientTape() as tape:
            tape.watch(x)
            outputs = project(x)
            loss = tf.add_n(
                [
                    tf.reduce_sum(tf.reshape(o, [8, 128, hidden]) * u)
                    for o, u in zip(outputs, upstream, strict=True)
                ]
            )
        return tape.gradient(loss, [x, *kernels, *biases])[0]

    return {
        "three products": lambda: step(separate),
        "one product, kernels concatenated": lambda: step(fused),
    }


def time_forms(forms, repeats, calls):
    """Median milliseconds per call of each form, the forms alternating each round."""
    compiled = {name: tf.function(form) for name, form in forms.items()}
    for function in compiled.values():
        for _ in range(3):
            function()
    times = {name: [] for name in compiled}
    for _ in range(repeats):
        for name, function in compiled.items():
            start = time.perf_counter()
            for _ in range(calls):
                result = function()
            result.numpy()
            times[name].append((time.perf_counter() - start) / calls * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    cases = [
        ("dx", "BERT-Small intermediate 512 -> 2048", _dx_forms(512, 2048)),
        ("dx", "BERT-Small output 2048 -> 512", _dx_forms(2048, 512)),
        ("dx", "BERT-base intermediate 768 -> 3072", _dx_forms(768, 3072)),
        ("dx", "BERT-base output 3072 -> 768", _dx_forms(3072, 768)),
        ("dx", "BERT-base attention 768 -> 768", _dx_forms(768, 768)),
        ("qkv", "BERT-Mini H=256", _qkv_forms(256)),
        ("qkv", "BERT-Small H=512", _qkv_forms(512)),
        ("qkv", "BERT-base H=768", _qkv_forms(768)),
    ]
    print("| product | shapes | form | median ms | × first form |")
    print("|---|---|---|---|---|")
    for product, shapes, forms in cases:
        medians = time_forms(forms, args.repeats, args.calls)
        first = next(iter(medians.values()))
        for name, ms in medians.items():
            print(f"| {product} | {shapes} | {name} | {ms:.2f} | {ms / first:.2f} |", flush=True)


if __name__ == "__main__":
    main()
