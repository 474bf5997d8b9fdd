"""extract_features' sequence: stream the lines through the encoder, write each line's vectors."""

import dataclasses

import tensorflow as tf
from absl import logging

from data.extraction.pooling import combine_layers, pool_tokens
from data.extraction.stream import LineStream, assemble, scan_input
from data.extraction.writers import open_writer
from data.records.batching import batch_examples
from modeling.bert_model import BertModel
from modeling.layers import weights_from_checkpoint
from modeling.tf1_checkpoint import load_tf1_checkpoint
from training import inference, summaries
from training.batch_plan import inference_plan
from training.distributed_input import inference_batches
from training.precision import compute_policy


@dataclasses.dataclass
class ExtractionRun:
    """Settings of one extract_features invocation: the flags of the same names.

    Attributes:
        layers: the parsed `--layers`, Python indexes into the encoder's layers (-1 = last).
        doc_stride: pieces between window starts for lines longer than a row, or None to
            truncate them as the original.
    """

    input_file: str
    output_file: str
    init_checkpoint: str
    layers: list
    max_seq_length: int
    batch_size: int
    jit_compile: bool
    pad_to_max_seq_length: bool
    precision: str = "float32"
    pooling: str = "none"
    layer_combine: str = "concatenate"
    output_format: str = "jsonl"
    output_dtype: str = "float32"
    doc_stride: int | None = None


def extract_features(run, bert_config, tokenizer, strategy):
    """Writes the activations of `run.layers` for every line of `run.input_file`.

    One record per input line, in order (data/extraction/writers.py: the formats); the lines
    stream through the model, so memory stays flat in the file's length, and the files appear
    only once complete.

    Args:
        run: `ExtractionRun`.
        bert_config: the encoder's `BertConfig`.
        tokenizer: a `FullTokenizer`.
        strategy: a `tf.distribute.Strategy` (one device: extraction is inference only).

    Returns:
        The number of lines written.
    """
    num_lines = scan_input(run.input_file, run.doc_stride)
    stream = LineStream(run.input_file, run.max_seq_length, tokenizer, run.doc_stride)
    # Every variable comes from the checkpoint (a strict load), so none is drawn at random.
    with strategy.scope(), compute_policy(run.precision), weights_from_checkpoint():
        model = BertModel(bert_config)
    load_tf1_checkpoint(run.init_checkpoint, bert_model=model)

    def layer_outputs(inputs):
        layers = model(inputs, training=False)["all_encoder_layers"]
        # float32 for the writer whatever the compute dtype.
        return {
            f"layer_{j}": tf.cast(layers[index], tf.float32) for j, index in enumerate(run.layers)
        }

    options = inference_plan(strategy, run.pad_to_max_seq_length, run.jit_compile).prediction()

    def dataset(batching):
        chunk = run.batch_size * max(batching.sort_batches, 1)
        rows = tf.data.Dataset.from_generator(
            stream.rows, output_signature=stream.output_signature()
        )
        return batch_examples(rows.batch(chunk), run.batch_size, False, batching)

    predict_step = inference.make_predict_step(strategy, layer_outputs, run.jit_compile)
    batches = inference.predictions(predict_step, inference_batches(strategy, dataset, options))
    # While this thread writes lines, the model computes up to 2 batches more: with full-length
    # batches the lines follow each batch; with sorted ones they follow each sort window.
    rows = inference.in_input_order(inference.ahead(batches))
    progress = summaries.InferenceProgress("extract", num_lines, unit="lines")
    settings = {**dataclasses.asdict(run), "num_lines": num_lines}
    with open_writer(run.output_file, run.output_format, settings) as writer:
        for _ in range(num_lines):
            # A line's plan is queued before its rows are read, so it is there once one is out.
            first = next(rows)
            plan = stream.next_plan()
            windows = [first] + [next(rows) for _ in range(plan.num_windows - 1)]
            layer_values = [
                assemble(plan, [w[f"layer_{j}"] for w in windows]) for j in range(len(run.layers))
            ]
            values = pool_tokens(combine_layers(layer_values, run.layer_combine), run.pooling)
            writer.write(plan.unique_id, plan.tokens, values)
            progress.update(1)
        if next(rows, None) is not None:
            raise RuntimeError("The model returned more rows than the input has lines.")
    progress.finish()
    logging.info("Wrote %d lines to %s", num_lines, run.output_file)
    return num_lines
