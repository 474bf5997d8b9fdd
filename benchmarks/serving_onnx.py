"""The ONNX Runtime peers of `benchmarks.serving`, built the way users build them.

From a Hugging Face folder of the fine-tuned encoder (convert_checkpoint.py --output_format=hf)
and the classifier head (`head.npz`: the TF1 checkpoint's `output_weights` [2, hidden] and
`output_bias` [2], written by `benchmarks.serving_prepare`), in a process without TensorFlow:

1. transformers' `BertForSequenceClassification` with those weights (pooler, dropout, the head:
   the same graph as run_classifier's), exported by `torch.onnx.export` (the TorchScript
   exporter, opset 17, batch and sequence dynamic);
2. `onnxruntime.transformers.optimizer.optimize_model(model_type="bert")`, which fuses
   attention, LayerNorm, GELU and the embeddings (`model_fp32.onnx`);
3. `onnxruntime.quantization.quantize_dynamic` of the fused graph, QInt8 weights, per channel
   (`model_int8_per_channel.onnx`) and per tensor (`model_int8_per_tensor.onnx`).

    python -m benchmarks.serving_onnx --hf_dir W/hf --output_dir W/onnx

`OrtClassifier` runs one of them: BertTokenizerFast from the same vocab.txt (lower case,
truncation at max_seq_length, a batch padded to its longest), then an `InferenceSession`.
"""

import argparse
import json
import os

import numpy as np

FP32 = "model_fp32.onnx"
INT8 = {"per_channel": "model_int8_per_channel.onnx", "per_tensor": "model_int8_per_tensor.onnx"}


def build(hf_dir, output_dir):
    """Writes the fused float32 graph and both int8 graphs into `output_dir`; returns the fused
    operator counts the optimizer reports."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig.from_pretrained(hf_dir, num_labels=2)
    model = BertForSequenceClassification.from_pretrained(hf_dir, config=config)
    head = np.load(os.path.join(hf_dir, "head.npz"))
    with torch.no_grad():
        # The original stores output_weights [num_labels, hidden], torch's [out, in] already.
        model.classifier.weight.copy_(torch.from_numpy(head["output_weights"]))
        model.classifier.bias.copy_(torch.from_numpy(head["output_bias"]))
    model.eval()
    os.makedirs(output_dir, exist_ok=True)
    raw = os.path.join(output_dir, "model_raw.onnx")
    example = {
        "input_ids": torch.ones(2, 8, dtype=torch.int64),
        "attention_mask": torch.ones(2, 8, dtype=torch.int64),
        "token_type_ids": torch.zeros(2, 8, dtype=torch.int64),
    }
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        model,
        (),
        raw,
        kwargs=example,
        input_names=list(example),
        output_names=["logits"],
        dynamic_axes={**{name: axes for name in example}, "logits": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    fused = optimize_model(
        raw,
        model_type="bert",
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
    )
    counts = fused.get_fused_operator_statistics()
    fused.save_model_to_file(os.path.join(output_dir, FP32))
    for name, file_name in INT8.items():
        quantize_dynamic(
            os.path.join(output_dir, FP32),
            os.path.join(output_dir, file_name),
            weight_type=QuantType.QInt8,
            per_channel=name == "per_channel",
            # Shape inference cannot type the outputs of the fused com.microsoft operators;
            # without a default the quantizer stops at the first MatMul after one.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    os.remove(raw)
    return {op: int(n) for op, n in counts.items()}


class OrtClassifier:
    """Sentences in, class probabilities out, through ONNX Runtime.

    Args:
        model_path: an .onnx file `build` wrote.
        vocab_file: the vocabulary the model was fine-tuned with.
        max_seq_length: as for run_classifier (longer sentences are truncated).
        num_threads: ONNX Runtime's intra-op threads.
    """

    def __init__(self, model_path, vocab_file, max_seq_length, num_threads):
        import onnxruntime as ort
        from transformers import BertTokenizerFast

        self._tokenizer = BertTokenizerFast(vocab_file=vocab_file, do_lower_case=True)
        self._max_seq_length = max_seq_length
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            model_path, options, providers=["CPUExecutionProvider"]
        )

    def predict(self, sentences):
        """Probabilities float32 [len(sentences), 2]."""
        encoded = self._tokenizer(
            sentences,
            padding="longest",
            truncation=True,
            max_length=self._max_seq_length,
            return_tensors="np",
        )
        feeds = {name: encoded[name].astype(np.int64) for name in _INPUTS}
        (logits,) = self._session.run(["logits"], feeds)
        logits = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)


_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf_dir", required=True)
    parser.add_argument("--output_dir", required=True)
    args = parser.parse_args()
    print(json.dumps(build(args.hf_dir, args.output_dir)))


if __name__ == "__main__":
    main()
