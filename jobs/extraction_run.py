"""extract_features' sequence: read lines, run the encoder, write JSON lines."""

import dataclasses

import tensorflow as tf
from absl import logging

from data.extraction.features import (
    convert_examples_to_features,
    format_json_line,
    read_examples,
)
from data.records.batching import batch_examples
from fileio.atomic import open_atomically
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


def extract_features(run, bert_config, tokenizer, strategy):
    """Writes the activations of `run.layers` for every line of `run.input_file`.

    One JSON line per input line, in order, as the original writes them; the file appears
    only once complete.

    Args:
        run: `ExtractionRun`.
        bert_config: the encoder's `BertConfig`.
        tokenizer: a `FullTokenizer`.
        strategy: a `tf.distribute.Strategy` (one device: extraction is inference only).

    Returns:
        The number of lines written.
    """
    examples = read_examples(run.input_file)
    features = convert_examples_to_features(examples, run.max_seq_length, tokenizer)
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

    columns = {
        name: tf.constant([getattr(f, name) for f in features], tf.int32)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
    options = inference_plan(strategy, run.pad_to_max_seq_length, run.jit_compile).prediction()

    def dataset(batching):
        chunk = run.batch_size * max(batching.sort_batches, 1)
        stream = tf.data.Dataset.from_tensor_slices(columns).batch(chunk)
        return batch_examples(stream, run.batch_size, False, batching)

    predict_step = inference.make_predict_step(strategy, layer_outputs, run.jit_compile)
    progress = summaries.InferenceProgress("extract", len(features))
    batches = inference.predictions(
        predict_step, inference_batches(strategy, dataset, options), progress
    )
    # While this thread writes lines, the model computes up to 2 batches more: with full-length
    # batches the lines follow each batch; with sorted ones they follow each sort window.
    batches = inference.ahead(batches)
    with open_atomically(run.output_file) as writer:
        for feature, outputs in zip(features, inference.in_input_order(batches), strict=True):
            values = [outputs[f"layer_{j}"] for j in range(len(run.layers))]
            line = format_json_line(feature.unique_id, feature.tokens, run.layers, values)
            writer.write(line + "\n")
    logging.info("Wrote %d lines to %s", len(features), run.output_file)
    return len(features)
