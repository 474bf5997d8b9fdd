"""export_model.py --task=ner: a fine-tuned tagger's text-in export."""

import os

import tensorflow as tf

from data.label_file import LABELS_FILE
from data.ner.labels import read_label_file
from jobs.export.weights import load
from serving.exports.ner import NerExport
from training.tasks import NerTask


def ner_model(run, bert_config, weights):
    """The fine-tuned tagger, weights loaded, and its tags.

    Returns:
        (`BertTokenClassifier`, list of tag strings in the head's order).

    Raises:
        ValueError: no tag list, or a checkpoint that does not hold such a tagger.
    """
    # labels.txt sits in the output_dir of the run_ner run the checkpoint comes from.
    label_file = run.label_file or os.path.join(weights.folder, LABELS_FILE)
    if not tf.io.gfile.exists(label_file):
        raise ValueError(
            f"No tag list at {label_file}: pass --label_file (the labels.txt of the run_ner "
            "run that wrote the checkpoint)."
        )
    labels = read_label_file(label_file)
    task = NerTask(bert_config, len(labels))
    task.build_model()
    load(run.task, task.variable_map(), weights)
    return task.model, labels


def ner_export(run, bert_config, weights):
    """The tagger's export and its signatures, weights loaded (a builder: `jobs.export`).

    Raises:
        ValueError: as `ner_model`.
    """
    model, labels = ner_model(run, bert_config, weights)
    export = NerExport(
        model, run.vocab_file, run.do_lower_case, run.max_seq_length, run.doc_stride, labels
    )
    return export, export.signatures()
