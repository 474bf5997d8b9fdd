#!/usr/bin/env bash
# Fine-tunes, evaluates and predicts one GLUE task, as the original README's MRPC command.
#
#     BERT_BASE_DIR=.../uncased_L-12_H-768_A-12 GLUE_DIR=.../glue_data \
#       bash scripts/run_glue.sh MRPC [OUTPUT_DIR] [extra run_classifier.py flags...]
#
# TASK is the GLUE folder name (CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI, AX);
# AX is predicted with an MNLI model: pass --init_checkpoint=<mnli output>/model.ckpt-N.
set -euo pipefail
cd "$(dirname "$0")/.."
TASK="${1:?usage: run_glue.sh TASK [OUTPUT_DIR] [flags...]}"
OUTPUT_DIR="${2:-/tmp/glue_output/$TASK}"
shift $(( $# >= 2 ? 2 : 1 ))
: "${BERT_BASE_DIR:?set BERT_BASE_DIR to the folder of bert_model.ckpt, vocab.txt, bert_config.json}"
: "${GLUE_DIR:?set GLUE_DIR to the folder holding the GLUE task folders}"
DO_TRAIN=true
DATA_DIR="$GLUE_DIR/$TASK"
# The GLUE download keeps AX as diagnostic/diagnostic.tsv; it has no training or dev data.
[ "$TASK" = "AX" ] && DO_TRAIN=false && DATA_DIR="$GLUE_DIR/diagnostic"
python run_classifier.py --task_name="$TASK" --do_train="$DO_TRAIN" --do_eval="$DO_TRAIN" \
  --do_predict=true --data_dir="$DATA_DIR" --vocab_file="$BERT_BASE_DIR/vocab.txt" \
  --bert_config_file="$BERT_BASE_DIR/bert_config.json" \
  --init_checkpoint="$BERT_BASE_DIR/bert_model.ckpt" --max_seq_length=128 \
  --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
  --output_dir="$OUTPUT_DIR" "$@"
