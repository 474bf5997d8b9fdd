"""The checkpoint formats convert_checkpoint.py reads and writes: one table, TensorFlow-free.

The command line's choices (`INPUT_FORMATS`, `OUTPUT_FORMATS`), its help and the table in
docs/checkpoints.md (`markdown_table`, checked by tests/test_docs.py) come from `FORMATS`;
`modeling.formats.conversion` reads and writes each one.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class CheckpointFormat:
    """One format: its flag value, what it is, whether it is read / written, the heads it holds.

    Attributes:
        name: the `--input_format` / `--output_format` value.
        what: a short description (Markdown).
        readable: `--input_format` accepts it.
        writable: `--output_format` accepts it.
        heads: the pre-training heads it can hold, and whether a fine-tuned task head.
    """

    name: str
    what: str
    readable: bool
    writable: bool
    heads: str


FORMATS = (
    CheckpointFormat(
        "tf1",
        "Google's `bert_model.ckpt` + `bert_config.json` (+ `vocab.txt`)",
        True,
        True,
        "MLM, NSP; a task head",
    ),
    CheckpointFormat(
        "keras", "this project's `bert_config.json` + `*.weights.h5`", True, True, "MLM + NSP"
    ),
    CheckpointFormat("hf", "Hugging Face folder (1)", True, True, "MLM, NSP; a task head"),
    CheckpointFormat("tf2", "Model Garden object checkpoint (2)", True, False, "MLM"),
    CheckpointFormat(
        "tfhub", "TF Hub BERT encoder SavedModel (3)", True, True, "MLM (`mlm` sub-object)"
    ),
    CheckpointFormat("keras_hub", "keras-hub preset (4)", True, True, "MLM"),
)

INPUT_FORMATS = tuple(f.name for f in FORMATS if f.readable)
OUTPUT_FORMATS = tuple(f.name for f in FORMATS if f.writable)


def markdown_table():
    """The formats as the Markdown table of docs/checkpoints.md, one line per row."""
    lines = [
        "| `--input_format` / `--output_format` | What it is | In | Out | Heads |",
        "|---|---|---|---|---|",
    ]
    for f in FORMATS:
        yes_no = ["yes" if flag else "no" for flag in (f.readable, f.writable)]
        lines.append(f"| `{f.name}` | {f.what} | {yes_no[0]} | {yes_no[1]} | {f.heads} |")
    return lines
