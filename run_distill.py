r"""Distils a fine-tuned BERT into a smaller, faster student of the same task.

The teacher is the --output_dir of a run_classifier.py, run_ner.py or run_squad.py run: its
task, data and settings are read from its flags.txt (any of them can be given again to change
it), its labels from its folder and its weights from its latest checkpoint. The student is
either some of the teacher's own layers or a checkpoint of any smaller size:

    python run_distill.py --teacher_dir=/tmp/sst2_teacher --student_layers=1,3,5 \
        --output_dir=/tmp/sst2_student

    python run_distill.py --teacher_dir=/tmp/ner_teacher --output_dir=/tmp/ner_student \
        --student_config_file=$SMALL_BERT/bert_config.json \
        --student_checkpoint=$SMALL_BERT/bert_model.ckpt --transfer_file=unlabelled.txt

The teacher's logits over the training data (and --transfer_file's text) are computed once and
stored beside the training records; the student then trains on them, mixed with the gold labels
(`training/distillation.py`), with the runner's own loop, optimizer and schedule; with
--hidden_loss_weight it also learns the teacher's hidden states, the teacher's encoder running
in each training step (`training/hidden_states.py`). Its --output_dir is a run of the
teacher's runner (flags.txt, labels, eval and prediction files, checkpoints), so
export_model.py, serve.py and convert_checkpoint.py take it unchanged, with
--bert_config_file=<output_dir>/bert_config.json. See docs/distillation.md.
"""

import importlib
import sys

from absl import flags

from command_line import distill_flags
from fileio.errors import run_command

FLAGS = flags.FLAGS
TEACHER_DIR, RUNNER = distill_flags.teacher_runner(sys.argv)
# The teacher's runner defines the task's flags; its flags.txt gives their values.
runner = importlib.import_module(RUNNER[: -len(".py")]) if RUNNER else None
distill_flags.define_distill_flags()


def main(argv):
    distill_flags.check_teacher(TEACHER_DIR, RUNNER)
    plan = distill_flags.prepare_student(FLAGS, RUNNER)

    def distillation():
        # Called by the runner once TensorFlow has loaded.
        from jobs.distillation import Distillation
        from modeling import tf1_checkpoint
        from training.distillation import DistillSettings

        return Distillation(
            settings=DistillSettings(
                temperature=plan["temperature"],
                alpha=plan["alpha"],
                hidden_weight=plan["hidden_weight"],
                hidden_pairs=plan["hidden_pairs"],
            ),
            runner=RUNNER,
            teacher_checkpoint=tf1_checkpoint.resolve_checkpoint_path(
                TEACHER_DIR, flag="--teacher_dir"
            ),
            teacher_config=plan["teacher_config"],
            student_layers=plan["student_layers"],
            transfer_files=tuple(FLAGS.transfer_file),
            transfer_format=FLAGS.transfer_format,
            distill_flags=distill_flags.DISTILL_FLAGS,
        )

    runner.main(argv, distillation=distillation)


if __name__ == "__main__":
    if RUNNER:
        sys.argv = distill_flags.with_teacher_flags(sys.argv, TEACHER_DIR)
    else:
        # No teacher's runner, no task flags to read the rest with: the teacher's sentence.
        sys.argv = distill_flags.without_runner_flags(sys.argv, TEACHER_DIR)
    run_command(main)
