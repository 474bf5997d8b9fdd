"""A fine-tuning runner's --init_checkpoint, checked before the run writes anything.

Runners check their flags, config and vocabulary before TensorFlow loads; this check reads the
checkpoint's index with TensorFlow, so it comes last, once those passed (run_classifier.py,
run_ner.py and run_squad.py call it before --dry_run ends them).
"""

from fileio.errors import UserError


def check_init_checkpoint(flag_values, bert_config):
    """Refuses an --init_checkpoint that names no checkpoint, or whose weights do not fit
    --bert_config_file, before a fine-tuning runner writes anything (its run would find out
    only after writing the training records).

    Reads the checkpoint's index only, with TensorFlow (which loads here, seconds before the
    strategy would load it; it reads any file system TensorFlow knows). Skipped when
    --output_dir holds a checkpoint: the run resumes from it and never reads --init_checkpoint.

    Raises:
        UserError: naming --init_checkpoint (and --bert_config_file where they disagree).
    """
    path = flag_values.init_checkpoint
    if not path:
        return
    import tensorflow as tf

    from modeling import tf1_checkpoint
    from training.checkpointer import list_checkpoints

    output_dir = flag_values.output_dir
    if output_dir and tf.io.gfile.isdir(output_dir) and list_checkpoints(output_dir):
        return
    prefix = tf1_checkpoint.resolve_checkpoint_path(path, flag="--init_checkpoint")
    misfits = tf1_checkpoint.encoder_misfits(prefix, bert_config)
    if misfits:
        more = f"; and {len(misfits) - 3} more" if len(misfits) > 3 else ""
        raise UserError(
            f"--init_checkpoint={path} does not fit --bert_config_file="
            f"{flag_values.bert_config_file} ({'; '.join(misfits[:3])}{more}): pass the "
            "bert_config.json that came with the checkpoint, or a checkpoint of the model it "
            "describes."
        )
