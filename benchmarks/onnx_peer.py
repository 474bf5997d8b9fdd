"""The ONNX Runtime peers of `benchmarks.serving`: the fine-tuned classifier exported by
torch.onnx, fused and quantized by ONNX Runtime's own tools as users build them
(`build_onnx`, run in a process without TensorFlow), and answered through an
`InferenceSession` (`OrtClassifier`)."""

import os

ONNX_INT8 = ("per_channel", "per_tensor")


def build_onnx(hf_dir, output_dir):
    """The ONNX Runtime peers, built the way users build them, in a process without
    TensorFlow, from the Hugging Face folder of the fine-tuned encoder and the classifier head
    (`head.npz`: the TF1 checkpoint's `output_weights` [2, hidden] and `output_bias` [2]):

    1. transformers' `BertForSequenceClassification` with those weights (pooler, dropout, the
       head: the same graph as run_classifier's), exported by `torch.onnx.export` (the
       TorchScript exporter, opset 17, batch and sequence dynamic);
    2. `onnxruntime.transformers.optimizer.optimize_model(model_type="bert")`, which fuses
       attention, LayerNorm, GELU and the embeddings (`model_fp32.onnx`);
    3. `onnxruntime.quantization.quantize_dynamic` of the fused graph, QInt8 weights, per
       channel (`model_int8_per_channel.onnx`) and per tensor (`model_int8_per_tensor.onnx`).

    Returns the fused operator counts the optimizer reports."""
    import numpy as np
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
    raw, fp32 = (
        os.path.join(output_dir, "model_raw.onnx"),
        os.path.join(output_dir, "model_fp32.onnx"),
    )
    example = {name: torch.ones(2, 8, dtype=torch.int64) for name in _ORT_INPUTS}
    example["token_type_ids"] = torch.zeros(2, 8, dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        model, (), raw, kwargs=example, input_names=list(example), output_names=["logits"],
        dynamic_axes={**{name: axes for name in example}, "logits": {0: "batch"}},
        opset_version=17, dynamo=False,
    )  # fmt: skip
    heads, hidden = config.num_attention_heads, config.hidden_size
    fused = optimize_model(raw, model_type="bert", num_heads=heads, hidden_size=hidden)
    counts = fused.get_fused_operator_statistics()
    fused.save_model_to_file(fp32)
    for variant in ONNX_INT8:
        quantize_dynamic(
            fp32, os.path.join(output_dir, f"model_int8_{variant}.onnx"),
            weight_type=QuantType.QInt8, per_channel=variant == "per_channel",
            # Shape inference cannot type the outputs of the fused com.microsoft operators;
            # without a default the quantizer stops at the first MatMul after one.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )  # fmt: skip
    os.remove(raw)
    return {op: int(n) for op, n in counts.items()}


_ORT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class OrtClassifier:
    """Sentences in, class probabilities out, through ONNX Runtime: BertTokenizerFast from the
    same vocab.txt (lower case, truncation at max_seq_length, a batch padded to its longest),
    then an `InferenceSession` of an .onnx file `build_onnx` wrote, with `num_threads` intra-op
    threads."""

    def __init__(self, model_path, vocab_file, max_seq_length, num_threads):
        import onnxruntime as ort
        from transformers import BertTokenizerFast

        self._tokenizer = BertTokenizerFast(vocab_file=vocab_file, do_lower_case=True)
        self._max_seq_length = max_seq_length
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = num_threads, 1
        providers = ["CPUExecutionProvider"]
        self._session = ort.InferenceSession(model_path, options, providers=providers)

    def predict(self, sentences):
        """Probabilities float32 [len(sentences), 2]."""
        import numpy as np

        encoded = self._tokenizer(
            sentences, padding="longest", truncation=True, max_length=self._max_seq_length,
            return_tensors="np",
        )  # fmt: skip
        feeds = {name: encoded[name].astype(np.int64) for name in _ORT_INPUTS}
        (logits,) = self._session.run(["logits"], feeds)
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)
