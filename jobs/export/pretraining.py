"""export_model.py --task=pretraining: the pre-trained model's export, ids in, masked-LM and
next-sentence logits out."""

from jobs.export.weights import load
from serving.exports.pretraining import PretrainingExport
from training.tasks import PretrainingTask


def pretraining_export(run, bert_config, weights):
    """The pre-trained model's export and signatures, weights loaded (a builder: `jobs.export`).

    Raises:
        ValueError: a checkpoint without both pre-training heads.
    """
    task = PretrainingTask(bert_config)
    task.build_model()
    load(run.task, task.variable_map(), weights)
    export = PretrainingExport(task.model, run.vocab_file, run.do_lower_case)
    return export, export.signatures()
