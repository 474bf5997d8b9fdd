#!/usr/bin/env bash
# Fine-tunes every GLUE task, predicts AX with the MNLI model and builds the submission zip.
#
#     BERT_BASE_DIR=... GLUE_DIR=... bash scripts/run_glue_all.sh [OUTPUT_ROOT]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="${1:-/tmp/glue_output}"
for task in CoLA SST-2 MRPC STS-B QQP MNLI QNLI RTE WNLI; do
  bash scripts/run_glue.sh "$task" "$ROOT/$task"
done
MNLI_CKPT="$(python -c "import sys, tensorflow as tf; print(tf.train.latest_checkpoint(sys.argv[1]))" "$ROOT/MNLI")"
bash scripts/run_glue.sh AX "$ROOT/AX" --init_checkpoint="$MNLI_CKPT"
python build_glue_submission.py --input_dir="$ROOT" --output_file="$ROOT/submission.zip"
echo "Submission: $ROOT/submission.zip"
