#!/usr/bin/env bash
# Fine-tunes every GLUE task with the BERT paper's protocol, predicts AX with the best MNLI
# model and builds the submission zip.
#
#     BERT_BASE_DIR=... GLUE_DIR=... bash scripts/run_glue_all.sh [OUTPUT_ROOT] [--single]
#
# Each task is a run_sweep.py sweep over the paper's learning rates {5e-5, 4e-5, 3e-5, 2e-5}
# (batch 32, 3 epochs, section 4.1), the best on dev kept; OUTPUT_ROOT/<task>/ holds its
# report and best/. The environment can widen it:
#   RESTARTS=5                      random restarts per setting (the paper restarted BERT-large
#                                   on the small sets); default 1
#   GRID="--grid=learning_rate=5e-5,3e-5,2e-5 --grid=num_train_epochs=2,3,4 \
#         --grid=train_batch_size=16,32"   the appendix grid
#   SWEEP_FLAGS="--devices=0,1,2,3" one trial per GPU at once (any other run_sweep.py flag)
# --single runs the original README's one setting (2e-5, batch 32, 3 epochs) per task instead.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="${1:-/tmp/glue_output}"
MODE="${2:-sweep}"
: "${BERT_BASE_DIR:?set BERT_BASE_DIR to the folder of bert_model.ckpt, vocab.txt, bert_config.json}"
: "${GLUE_DIR:?set GLUE_DIR to the folder holding the GLUE task folders}"
GRID="${GRID:---grid=learning_rate=5e-5,4e-5,3e-5,2e-5}"
RESTARTS="${RESTARTS:-1}"
read -r -a GRID_FLAGS <<< "$GRID"
read -r -a EXTRA_FLAGS <<< "${SWEEP_FLAGS:-}"

sweep() {
  local task="$1"
  # The paper's fixed settings, unless the grid varies them.
  local fixed=()
  [[ "$GRID" == *"train_batch_size="* ]] || fixed+=(--train_batch_size=32)
  [[ "$GRID" == *"num_train_epochs="* ]] || fixed+=(--num_train_epochs=3.0)
  [[ "$GRID" == *"learning_rate="* ]] || fixed+=(--learning_rate=2e-5)
  python run_sweep.py --sweep_dir="$ROOT/$task" "${GRID_FLAGS[@]}" --restarts="$RESTARTS" \
    "${EXTRA_FLAGS[@]}" -- \
    run_classifier.py --task_name="$task" --do_train=true --do_eval=true --do_predict=true \
    --data_dir="$GLUE_DIR/$task" --vocab_file="$BERT_BASE_DIR/vocab.txt" \
    --bert_config_file="$BERT_BASE_DIR/bert_config.json" \
    --init_checkpoint="$BERT_BASE_DIR/bert_model.ckpt" --max_seq_length=128 "${fixed[@]}"
}

for task in CoLA SST-2 MRPC STS-B QQP MNLI QNLI RTE WNLI; do
  if [ "$MODE" = "--single" ]; then
    bash scripts/run_glue.sh "$task" "$ROOT/$task"
  else
    sweep "$task"
  fi
done
# The MNLI model that predicts AX: the run's newest checkpoint, or the sweep's best trial's.
MNLI_CKPT="$(python - "$ROOT/MNLI" <<'EOF'
import json, os, sys
import tensorflow as tf
folder = sys.argv[1]
report = os.path.join(folder, "sweep_results.json")
if os.path.exists(report):
    with open(report) as f:
        folder = json.load(f)["best"]["output_dir"]
print(tf.train.latest_checkpoint(folder))
EOF
)"
bash scripts/run_glue.sh AX "$ROOT/AX" --init_checkpoint="$MNLI_CKPT"
python build_glue_submission.py --input_dir="$ROOT" --output_file="$ROOT/submission.zip"
echo "Submission: $ROOT/submission.zip"
