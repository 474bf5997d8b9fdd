"""extract_features' output files, one writer per `--output_format`, each written in input order
as the lines come and renamed into place only once complete (`fileio.atomic`).

Every writer takes `write(unique_id, tokens, values)` per line: `values` float32
`[num_tokens, width]` per token (`--pooling=none`) or `[width]` pooled. The layouts (docs/features.md):

* jsonl: per token, the original's lines (byte for byte with `--layer_combine=concatenate`);
  pooled, `{"linex_index": i, "tokens": [...], "values": [...]}`.
* npy: pooled, `output_file` `[lines, width]`; per token, `output_file` `[total_tokens, width]`,
  `<stem>.offsets.npy` int64 `[lines + 1]` (line i is rows offsets[i]:offsets[i + 1]) and
  `<stem>.tokens.txt` (line i's tokens, space-separated).
* safetensors: tensor `values` as npy's, per token also `offsets`, and the tokens file.
* tfrecord: one tf.train.Example per line: `linex_index` int64, `tokens` bytes,
  `values` float (per token: num_tokens * width, row by row).
"""

import contextlib
import json

import numpy as np
import tensorflow as tf

from data.extraction.features import format_json_line, value_lists
from data.extraction.npy_files import NpyRows
from fileio.atomic import atomic_output, open_atomically, write_safetensors


def sidecar_path(output_file, suffix):
    """`<stem><suffix>` beside `output_file`, the stem without a .npy / .safetensors extension."""
    for extension in (".npy", ".safetensors"):
        if output_file.endswith(extension):
            return output_file[: -len(extension)] + suffix
    return output_file + suffix


class JsonlWriter:
    """JSON lines. Per token: the original's schema, one `layers` entry per chosen layer
    (`--layer_combine=concatenate`) or one whose `index` lists the averaged layers (`mean`)."""

    def __init__(self, stream, layers, layer_combine):
        self._stream = stream
        self._indexes = list(layers) if layer_combine == "concatenate" else [list(layers)]

    def write(self, unique_id, tokens, values):
        if values.ndim == 2:
            blocks = np.split(values, len(self._indexes), axis=1)
            line = format_json_line(unique_id, tokens, self._indexes, blocks)
        else:
            text = value_lists(values[np.newaxis])[0]
            line = (
                f'{{"linex_index": {unique_id}, "tokens": {json.dumps(tokens)}, '
                f'"values": [{text}]}}'
            )
        self._stream.write(line + "\n")


class NpyWriter:
    """`.npy` arrays streamed to disk (see the module docstring for the files)."""

    def __init__(self, paths, num_lines, dtype, pooled):
        self._pooled = pooled
        self._values = NpyRows(paths["values"], dtype, num_rows=num_lines if pooled else None)
        if not pooled:
            self._offsets = NpyRows(paths["offsets"], np.int64, num_rows=num_lines + 1)
            self._offsets.append(np.zeros([1], np.int64))
            self._tokens = tf.io.gfile.GFile(paths["tokens"], "w")
            self._count = 0

    def write(self, unique_id, tokens, values):
        del unique_id  # the row (pooled) or the offsets' index (per token)
        self._values.append(values[np.newaxis] if self._pooled else values)
        if not self._pooled:
            self._count += len(values)
            self._offsets.append(np.array([self._count], np.int64))
            self._tokens.write(" ".join(tokens) + "\n")

    def close(self, finish=True):
        self._values.close(finish)
        if not self._pooled:
            self._offsets.close(finish)
            self._tokens.close()


class SafetensorsWriter:
    """A `.safetensors` file, written (`fileio.atomic.write_safetensors`) once every line is in:
    its header, first in the file, gives every tensor's size, so the values are held until then."""

    def __init__(self, paths, dtype, pooled, metadata):
        self._paths, self._dtype, self._pooled, self._metadata = paths, dtype, pooled, metadata
        self._rows, self._offsets = [], [0]
        self._tokens = None if pooled else tf.io.gfile.GFile(paths["tokens"], "w")

    def write(self, unique_id, tokens, values):
        del unique_id
        self._rows.append(values.astype(self._dtype))
        if not self._pooled:
            self._offsets.append(self._offsets[-1] + len(values))
            self._tokens.write(" ".join(tokens) + "\n")

    def close(self, finish=True):
        if self._tokens is not None:
            self._tokens.close()
        if not finish:
            return
        values = np.stack(self._rows) if self._pooled else np.concatenate(self._rows)
        tensors = {"values": values}
        if not self._pooled:
            tensors["offsets"] = np.array(self._offsets, np.int64)
        write_safetensors(self._paths["values"], tensors, self._metadata)


class TfrecordWriter:
    """One `tf.train.Example` per line."""

    def __init__(self, path):
        self._writer = tf.io.TFRecordWriter(path)

    def write(self, unique_id, tokens, values):
        feature = {
            "linex_index": tf.train.Feature(int64_list=tf.train.Int64List(value=[unique_id])),
            "tokens": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[t.encode("utf-8") for t in tokens])
            ),
            "values": tf.train.Feature(float_list=tf.train.FloatList(value=values.ravel())),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        self._writer.write(example.SerializeToString(deterministic=True))

    def close(self, finish=True):
        del finish  # the file is removed unless the run succeeds
        self._writer.close()


def output_files(output_file, output_format, pooled):
    """The files a run writes: {role: path}; "values" is `output_file` itself."""
    files = {"values": output_file}
    if not pooled and output_format in ("npy", "safetensors"):
        files["tokens"] = sidecar_path(output_file, ".tokens.txt")
        if output_format == "npy":
            files["offsets"] = sidecar_path(output_file, ".offsets.npy")
    return files


@contextlib.contextmanager
def open_writer(output_file, output_format, settings):
    """Yields the writer of one run; its files appear under their names only if the block
    succeeds (all of them, or none: a failure leaves the previous files, or none).

    Args:
        output_file: `--output_file`.
        output_format: one of `options.OUTPUT_FORMATS`.
        settings: dict with "pooling", "layers", "layer_combine", "output_dtype" and
            "num_lines" (the input's line count).

    Yields:
        A writer with `write(unique_id, tokens, values)`.
    """
    pooled = settings["pooling"] != "none"
    if output_format == "jsonl":
        with open_atomically(output_file) as stream:
            yield JsonlWriter(stream, settings["layers"], settings["layer_combine"])
        return
    with contextlib.ExitStack() as stack:
        paths = {
            role: stack.enter_context(atomic_output(path))
            for role, path in output_files(output_file, output_format, pooled).items()
        }
        dtype = np.dtype(settings["output_dtype"])
        if output_format == "npy":
            writer = NpyWriter(paths, settings["num_lines"], dtype, pooled)
        elif output_format == "safetensors":
            metadata = {
                key: str(settings[key]) for key in ("pooling", "layer_combine", "output_dtype")
            }
            metadata["layers"] = ",".join(map(str, settings["layers"]))
            writer = SafetensorsWriter(paths, dtype, pooled, metadata)
        else:
            writer = TfrecordWriter(paths["values"])
        try:
            yield writer
        except BaseException:
            writer.close(finish=False)
            raise
        writer.close()
