#!/usr/bin/env bash
# Fine-tunes on CoNLL-2003 NER and tags dev and test, as the BERT paper (section 5.3): a cased
# model, the first WordPiece of each word tagged, maximal document context, no CRF.
#
#     BERT_BASE_DIR=.../cased_L-12_H-768_A-12 NER_DIR=.../conll2003 \
#       bash scripts/run_ner.sh [OUTPUT_DIR] [extra run_ner.py flags...]
#
# NER_DIR holds train.txt, dev.txt and test.txt in CoNLL format (eng.train, eng.testa,
# eng.testb renamed; IOB1 or IOB2). The paper reports BERT-base 96.4 dev / 92.4 test F1 (mean
# of 5 restarts, hyper-parameters chosen on dev from batch 16/32, learning rate 5e-5/3e-5/2e-5,
# 2-4 epochs). Any CoNLL-format data set works the same way (pass --document_context=false when
# it has no -DOCSTART- documents).
set -euo pipefail
cd "$(dirname "$0")/.."
OUTPUT_DIR="${1:-/tmp/ner_output}"
shift $(( $# >= 1 ? 1 : 0 ))
: "${BERT_BASE_DIR:?set BERT_BASE_DIR to the folder of bert_model.ckpt, vocab.txt, bert_config.json}"
: "${NER_DIR:?set NER_DIR to the folder holding train.txt, dev.txt and test.txt}"
python run_ner.py --vocab_file="$BERT_BASE_DIR/vocab.txt" \
  --bert_config_file="$BERT_BASE_DIR/bert_config.json" \
  --init_checkpoint="$BERT_BASE_DIR/bert_model.ckpt" --do_lower_case=false \
  --data_dir="$NER_DIR" --do_train=true --do_eval=true --do_predict=true \
  --document_context=true --max_seq_length=128 --train_batch_size=32 \
  --learning_rate=5e-5 --num_train_epochs=3.0 --output_dir="$OUTPUT_DIR" "$@"
cat "$OUTPUT_DIR/eval_results.txt"
[ -f "$OUTPUT_DIR/test_results.txt" ] && cat "$OUTPUT_DIR/test_results.txt"
echo "Tagged files (conlleval.pl reads them as they are): $OUTPUT_DIR/eval_predictions.txt," \
  "$OUTPUT_DIR/test_predictions.txt"
