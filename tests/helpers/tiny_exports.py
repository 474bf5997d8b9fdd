"""Text-in exports of random tiny models (tests/helpers/tiny_config.py), for tests of what
serves them: a few seconds each instead of a fine-tuning run."""

import numpy as np

# Whole words, then letters, so that any lower-case text tokenizes into known pieces.
WORDS = ["the", "man", "went", "to", "market", "river", "paris", "who", "a", "b", "?", ".", ","]
VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    *WORDS,
    *"cdefghijklmnopqrstuvwxyz",
    *("##" + c for c in "abcdefghijklmnopqrstuvwxyz"),
]
NER_LABELS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]
MAX_SEQ_LENGTH = 24


def write_checkpoint(task, folder, rng):
    """Saves the task's random weights as an original checkpoint in `folder`, its head's logits
    a few units apart so that answers differ between inputs."""
    from modeling import tf1_checkpoint

    task.build_model()
    arrays = tf1_checkpoint.variables_to_arrays(task.variable_map())
    for name, value in arrays.items():
        if name.endswith("output_weights") or name.startswith("cls/squad/"):
            arrays[name] = rng.normal(0, 2, value.shape).astype(np.float32)
    folder.mkdir(parents=True)
    tf1_checkpoint.save_tf1_checkpoint(arrays, str(folder / "model.ckpt"))


def write_tiny_exports(root, exports=("classifier", "ner", "squad")):
    """Writes tiny random checkpoints and their text-in exports under `root`.

    Args:
        root: a pathlib.Path folder.
        exports: any of "classifier" (MRPC: text_a and text_b), "classifier_bfloat16" (the same
            weights computing in bfloat16), "classifier_int8" (the same weights as an int8
            TFLite export), "ner" and "squad" (SQuAD 1.1).

    Returns:
        {export name: its folder}.
    """
    from tests.helpers.tiny_config import tiny_config, write_tiny_config
    from tests.serving.fresh_process import export_here
    from training.tasks import ClassifierTask, NerTask, SquadTask

    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    write_tiny_config(root / "bert_config.json", vocab_size=len(VOCAB))
    config = tiny_config(vocab_size=len(VOCAB))
    rng = np.random.default_rng(0)
    tasks = {
        "classifier": lambda: ClassifierTask(config, 2, False),
        "ner": lambda: NerTask(config, len(NER_LABELS)),
        "squad": lambda: SquadTask(config),
    }
    settings = {
        "classifier": dict(task_name="MRPC"),
        "classifier_bfloat16": dict(task_name="MRPC", precision="mixed_bfloat16"),
        "classifier_int8": dict(task_name="MRPC", format="tflite", quantize="int8"),
        "ner": {},
        "squad": {},
    }
    written = {}
    for name in exports:
        task = name.split("_")[0]
        checkpoint = root / "checkpoints" / task
        if not checkpoint.exists():
            write_checkpoint(tasks[task](), checkpoint, rng)
            if task == "ner":
                (checkpoint / "labels.txt").write_text("\n".join(NER_LABELS) + "\n")
        written[name] = root / name
        export_here(
            root / "bert_config.json",
            task=task,
            checkpoint=checkpoint,
            vocab_file=root / "vocab.txt",
            max_seq_length=MAX_SEQ_LENGTH,
            export_dir=written[name],
            **settings[name],
        )
    return written
