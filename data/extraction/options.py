"""extract_features.py's output choices, and the combinations of them that cannot work.

TensorFlow-free: the runner checks them before TensorFlow loads, so a bad command line fails
in its first second.
"""

from fileio.errors import UserError

# --pooling: "none" writes every token; the others write one vector per line (pooling.py).
POOLINGS = ("none", "mean", "max", "cls", "first_last_mean")
# --layer_combine: the chosen layers side by side (in --layers order), or their average.
LAYER_COMBINES = ("concatenate", "mean")
OUTPUT_FORMATS = ("jsonl", "npy", "safetensors", "tfrecord")
OUTPUT_DTYPES = ("float32", "float16")

# first_last_mean reads these two of the encoder's layers (its first and last Transformer
# layers, as the "first-last avg" of the sentence-embedding literature) and averages them.
FIRST_LAST_LAYERS = (0, -1)


def check_output_options(
    pooling, layer_combine, output_format, output_dtype, layers_given=False, combine_given=False
):
    """Raises a `UserError` for output flags that cannot work together.

    Args:
        pooling: `--pooling`.
        layer_combine: `--layer_combine`.
        output_format: `--output_format`.
        output_dtype: `--output_dtype`.
        layers_given: `--layers` was on the command line.
        combine_given: `--layer_combine` was on the command line.

    Raises:
        UserError: naming the flags and the fix.
    """
    if output_dtype == "float16" and output_format == "jsonl":
        raise UserError(
            "--output_dtype=float16 has no meaning for --output_format=jsonl (JSON writes "
            "decimals rounded to 6 places): pass --output_format=npy or safetensors for float16 "
            "files, or leave out --output_dtype."
        )
    if output_dtype == "float16" and output_format == "tfrecord":
        raise UserError(
            "--output_dtype=float16 cannot be written with --output_format=tfrecord "
            "(tf.train.Example holds float32 values only): pass --output_format=npy or "
            "safetensors for float16 files, or leave out --output_dtype."
        )
    if pooling == "first_last_mean" and (layers_given or combine_given):
        flag = "--layers" if layers_given else f"--layer_combine={layer_combine}"
        raise UserError(
            f"--pooling=first_last_mean reads the first and last encoder layers and averages "
            f"them itself, so {flag} cannot apply: leave it out, or pass --pooling=mean "
            "--layer_combine=mean with the --layers you want averaged."
        )
