#!/usr/bin/env bash
# Phase-1 (seq 128) pre-training throughput on one GPU: BERT-base and BERT-large, bf16 + XLA,
# the whole loop (TFRecord input, Trainer) and the bare step, with model-FLOPs utilisation.
#
#     bash benchmarks/gpu_pretraining.sh [PEAK_TFLOPS]
#
# PEAK_TFLOPS is the GPU's dense bf16 peak (default 989, an H100/H200 SXM); MFU = achieved model
# TFLOP/s (forward + backward, 3x forward FLOPs) / peak.
set -euo pipefail
cd "$(dirname "$0")/.."
PEAK="${1:-989}"
for spec in "base 256" "large 128"; do
  set -- $spec
  for mode in bare loop; do
    python benchmarks/bench_pretraining_loop.py --mode "$mode" --config "$1" --batch "$2" \
      --seq 128 --preds 20 --precision mixed_bfloat16 --xla --steps 50 --warmup 10 \
      --iterations_per_loop 25 |
      python -c "import json,sys; r=json.loads(sys.stdin.read().splitlines()[-1]); \
print(f\"$1 batch $2 $mode: {r['examples_per_s']:.0f} seq/s, {r['tflops']:.0f} TFLOP/s, \
MFU {100 * r['tflops'] / $PEAK:.1f}%\")"
  done
done
