"""export_model.py --task=squad: a fine-tuned SQuAD model's text-in export, with the null
threshold a SQuAD 2.0 model answers by."""

import os

import tensorflow as tf
from absl import logging

from data.squad import evaluation
from jobs.export.weights import load
from serving.exports.squad import SquadExport
from training.tasks import SquadTask


def _null_threshold(run, weights):
    if run.null_score_diff_threshold is not None:
        return run.null_score_diff_threshold
    path = os.path.join(weights.folder, evaluation.THRESHOLD_FILE)
    if not tf.io.gfile.exists(path):
        raise ValueError(
            f"A SQuAD 2.0 export needs its null threshold, and {path} does not exist: run "
            "run_squad.py --do_eval --version_2_with_negative on the dev set with the same "
            "--output_dir (it writes the best threshold there), or pass "
            "--null_score_diff_threshold."
        )
    with tf.io.gfile.GFile(path) as f:
        return float(f.read())


def squad_model(run, bert_config, weights):
    """The fine-tuned SQuAD model, weights loaded, and the null threshold it answers by.

    Returns:
        (`BertSpanModel`, float: the SQuAD 2.0 threshold, 0.0 for SQuAD 1.1).

    Raises:
        ValueError: a SQuAD 2.0 export without its null threshold, or a checkpoint that does
            not hold such a model.
    """
    threshold = _null_threshold(run, weights) if run.version_2_with_negative else 0.0
    task = SquadTask(bert_config)
    task.build_model()
    load(run.task, task.variable_map(), weights)
    logging.info("SQuAD export: null threshold %r", threshold)
    return task.model, threshold


def squad_export(run, bert_config, weights):
    """The SQuAD model's export and its signatures, weights loaded (a builder: `jobs.export`).

    Raises:
        ValueError: as `squad_model`.
    """
    model, threshold = squad_model(run, bert_config, weights)
    export = SquadExport(
        model,
        run.vocab_file,
        run.do_lower_case,
        run.max_seq_length,
        run.doc_stride,
        run.max_query_length,
        run.n_best_size,
        run.max_answer_length,
        run.version_2_with_negative,
        threshold,
    )
    return export, export.signatures()
