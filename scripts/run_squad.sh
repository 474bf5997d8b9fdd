#!/usr/bin/env bash
# Fine-tunes on SQuAD and predicts the dev set, as the original README's SQuAD commands.
#
#     BERT_BASE_DIR=.../uncased_L-12_H-768_A-12 SQUAD_DIR=.../squad \
#       bash scripts/run_squad.sh [v1.1|v2.0] [OUTPUT_DIR] [extra run_squad.py flags...]
#
# SQUAD_DIR holds train-v1.1.json and dev-v1.1.json (or the v2.0 files). The predictions are
# scored with the official script if it is there (evaluate-v1.1.py / evaluate-v2.0.py). For
# SQuAD 2.0, take best_f1_thresh from that output and predict again with
# --do_train=false --init_checkpoint=OUTPUT_DIR/model.ckpt-N --null_score_diff_threshold=T.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${1:-v1.1}"
OUTPUT_DIR="${2:-/tmp/squad_output/$VERSION}"
shift $(( $# >= 2 ? 2 : $# ))
: "${BERT_BASE_DIR:?set BERT_BASE_DIR to the folder of bert_model.ckpt, vocab.txt, bert_config.json}"
: "${SQUAD_DIR:?set SQUAD_DIR to the folder holding the SQuAD json files}"
case "$VERSION" in
  v1.1) V2=false ;;
  v2.0) V2=true ;;
  *) echo "run_squad.sh: VERSION must be v1.1 or v2.0, not '$VERSION'" >&2; exit 2 ;;
esac
python run_squad.py --vocab_file="$BERT_BASE_DIR/vocab.txt" \
  --bert_config_file="$BERT_BASE_DIR/bert_config.json" \
  --init_checkpoint="$BERT_BASE_DIR/bert_model.ckpt" \
  --do_train=true --train_file="$SQUAD_DIR/train-$VERSION.json" \
  --do_predict=true --predict_file="$SQUAD_DIR/dev-$VERSION.json" \
  --train_batch_size=12 --learning_rate=3e-5 --num_train_epochs=2.0 \
  --max_seq_length=384 --doc_stride=128 --version_2_with_negative="$V2" \
  --output_dir="$OUTPUT_DIR" "$@"
EVALUATE="$SQUAD_DIR/evaluate-$VERSION.py"
if [ -f "$EVALUATE" ]; then
  if [ "$V2" = true ]; then
    python "$EVALUATE" "$SQUAD_DIR/dev-$VERSION.json" "$OUTPUT_DIR/predictions.json" \
      --na-prob-file "$OUTPUT_DIR/null_odds.json"
  else
    python "$EVALUATE" "$SQUAD_DIR/dev-$VERSION.json" "$OUTPUT_DIR/predictions.json"
  fi
fi
echo "Predictions: $OUTPUT_DIR/predictions.json (n-best: $OUTPUT_DIR/nbest_predictions.json)"
