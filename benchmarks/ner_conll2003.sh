#!/usr/bin/env bash
# CoNLL-2003 dev/test F1 of a fixed short recipe, with and without document context.
#
#     NER_DIR=.../conll2003 MODEL_DIR=.../minilm_tf1 bash benchmarks/ner_conll2003.sh [OUT_DIR]
#
# NER_DIR holds train.txt, dev.txt, test.txt (CoNLL format); MODEL_DIR a checkpoint in Google's
# layout (bert_model.ckpt, bert_config.json, vocab.txt), e.g. all-MiniLM-L6-v2 converted by
# convert_checkpoint.py (uncased, hence --do_lower_case=true). The recipe: 1 epoch, batch 32,
# learning rate 1e-4, max_seq_length 128, seed 12345.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-/tmp/ner_conll2003}"
: "${NER_DIR:?set NER_DIR to the folder holding train.txt, dev.txt and test.txt}"
: "${MODEL_DIR:?set MODEL_DIR to a checkpoint folder (bert_model.ckpt, bert_config.json, vocab.txt)}"
mkdir -p "$OUT_DIR"
for CONTEXT in true false; do
  OUT="$OUT_DIR/document_context_$CONTEXT"
  START=$(date +%s)
  python run_ner.py --vocab_file="$MODEL_DIR/vocab.txt" \
    --bert_config_file="$MODEL_DIR/bert_config.json" \
    --init_checkpoint="$MODEL_DIR/bert_model.ckpt" --do_lower_case=true \
    --data_dir="$NER_DIR" --do_train --do_eval --do_predict --document_context="$CONTEXT" \
    --max_seq_length=128 --train_batch_size=32 --eval_batch_size=64 --predict_batch_size=64 \
    --learning_rate=1e-4 --num_train_epochs=1.0 --output_dir="$OUT" 2> "$OUT.log"
  SECONDS_TAKEN=$(( $(date +%s) - START ))
  echo "document_context=$CONTEXT, $SECONDS_TAKEN s:"
  grep -E "^(eval|test)_(f1|precision|recall) " "$OUT/eval_results.txt" "$OUT/test_results.txt"
done
