#!/usr/bin/env bash
# Pre-training on N worker processes of this machine, each with its TF_CONFIG: the pattern to
# copy to real hosts (there, start one worker per host with that host's task index).
#
#     NUM_WORKERS=2 BERT_CONFIG=.../bert_config.json INPUT_FILE='/data/tf_examples*.tfrecord' \
#       bash scripts/run_pretraining_multiworker.sh OUTPUT_DIR [extra run_pretraining.py flags...]
#
# --train_batch_size is the global batch of all workers, as on one device: each worker reads
# its slice of every global batch (its own files when there are at least as many files as
# workers), and a run of N workers trains exactly as one device with the same flags would.
# OUTPUT_DIR must be the same directory for every worker (on real hosts: gs:// or a shared
# file system); only worker 0, the chief, writes there. Killed, the same command resumes from
# the last checkpoint. Logs: $LOG_DIR/pretraining-worker-<i>.log (LOG_DIR defaults to /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
OUTPUT_DIR="${1:?usage: run_pretraining_multiworker.sh OUTPUT_DIR [flags...]}"
shift
: "${BERT_CONFIG:?set BERT_CONFIG to the bert_config.json of the model}"
: "${INPUT_FILE:?set INPUT_FILE to the TFRecords of create_pretraining_data.py}"
NUM_WORKERS="${NUM_WORKERS:-2}"
BASE_PORT="${BASE_PORT:-23456}"
LOG_DIR="${LOG_DIR:-/tmp}"

addresses=""
for ((i = 0; i < NUM_WORKERS; i++)); do
  addresses+="${addresses:+, }\"localhost:$((BASE_PORT + i))\""
done
cluster="{\"worker\": [$addresses]}"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' INT TERM
for ((i = 0; i < NUM_WORKERS; i++)); do
  TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"worker\", \"index\": $i}}" \
    python run_pretraining.py --strategy=multi_worker_mirrored \
      --bert_config_file="$BERT_CONFIG" --input_file="$INPUT_FILE" \
      --output_dir="$OUTPUT_DIR" --do_train=true "$@" > "$LOG_DIR/pretraining-worker-$i.log" 2>&1 &
  pids+=("$!")
done
status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "worker $i failed; see $LOG_DIR/pretraining-worker-$i.log" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "Done: $OUTPUT_DIR (the chief's log: $LOG_DIR/pretraining-worker-0.log)"
exit "$status"
