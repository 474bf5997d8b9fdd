#!/usr/bin/env bash
# The accelerator check, one command: correctness of the mirrored, mixed-precision and XLA
# paths on this machine's GPUs, then BERT-base / BERT-large phase-1 (seq 128) and phase-2
# (seq 512) pre-training throughput per GPU of this project's Trainer beside Model Garden's
# BertPretrainer, float32 / mixed_float16 / mixed_bfloat16, with and without XLA, with peak
# device memory and MFU. Prints one table and writes the JSON (--out).
#
#     bash benchmarks/accelerator_check.sh --out accelerator_check.json      # on a GPU machine
#     bash benchmarks/accelerator_check.sh --dry_run --out /tmp/check.json   # CPU, tiny model
#
# Useful flags: --budget_s (default 420, checks included), --configs large,base, --phases 1,2,
# --precisions, --xla on,off, --peers ours,model_garden, --peak_tflops (default 989, the dense
# bf16 peak of an H100/H200 SXM), --skip_checks, --checks_only. See benchmarks/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python -m benchmarks.accelerator_check "$@"
