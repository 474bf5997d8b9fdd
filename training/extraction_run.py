"""extract_features' sequence: read lines, run the encoder, write JSON lines."""

import dataclasses

import tensorflow as tf
from absl import logging

from data.extraction.features import (
    convert_examples_to_features,
    format_json_line,
    read_examples,
)
from fileio.atomic import open_atomically
from modeling.bert_model import BertModel
from modeling.tf1_checkpoint import load_tf1_checkpoint
from training import inference
from training.distributed_input import inference_batches


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
    with strategy.scope():
        model = BertModel(bert_config)
    load_tf1_checkpoint(run.init_checkpoint, bert_model=model)

    def layer_outputs(inputs):
        layers = model(inputs, training=False)["all_encoder_layers"]
        return {f"layer_{j}": layers[index] for j, index in enumerate(run.layers)}

    dataset = tf.data.Dataset.from_tensor_slices(
        {
            name: tf.constant([getattr(f, name) for f in features], tf.int32)
            for name in ("input_ids", "input_mask", "segment_ids")
        }
    ).batch(run.batch_size)
    predict_step = inference.make_predict_step(strategy, layer_outputs, run.jit_compile)
    rows = iter(features)
    with open_atomically(run.output_file) as writer:
        batches = inference_batches(strategy, lambda _: dataset, pad=False)
        for outputs in inference.predictions(predict_step, batches):
            values = [outputs[f"layer_{j}"] for j in range(len(run.layers))]
            for row in range(len(values[0])):
                feature = next(rows)
                line = format_json_line(
                    feature.unique_id, feature.tokens, run.layers, [v[row] for v in values]
                )
                writer.write(line + "\n")
    logging.info("Wrote %d lines to %s", len(features), run.output_file)
    return len(features)
