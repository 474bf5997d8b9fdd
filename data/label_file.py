"""The labels.txt a fine-tuning run writes beside its checkpoints: the classifier's classes or
the tagger's tags, one per line in the head's output order, which export_model.py,
convert_checkpoint.py and serve.py read back (each task reads and checks it its own way:
`data.own_data.labels.read_labels_file`, `data.ner.labels.read_label_file`)."""

from fileio.atomic import write_atomically

LABELS_FILE = "labels.txt"


def label_file_text(labels):
    """The text of a labels.txt: one label per line.

    Args:
        labels: the label strings, in the head's output order.
    """
    return "".join(f"{label}\n" for label in labels)


def write_label_file(path, labels):
    """Writes `labels` as a labels.txt at `path`, atomically."""
    write_atomically(path, label_file_text(labels))
