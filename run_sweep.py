r"""The BERT paper's fine-tuning protocol in one command: a grid times random restarts, best on dev.

Runs one fine-tuning runner (run_classifier.py, run_squad.py or run_ner.py) once per setting
of the grid and restart, each trial in its own folder under --sweep_dir, ranks the trials by
the task's official dev metric and reports the spread, e.g.:

    python run_sweep.py --sweep_dir=/tmp/mrpc_sweep \
      --grid=learning_rate=5e-5,4e-5,3e-5,2e-5 --grid=num_train_epochs=2,3,4 --restarts=5 \
      -- run_classifier.py --task_name=MRPC --do_train=true --do_eval=true --do_predict=true \
         --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
         --bert_config_file=$BERT_BASE_DIR/bert_config.json \
         --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
         --train_batch_size=32

It writes sweep_results.json, summary.tsv, expected_max.tsv, expected_max.png, scores.png and
best/ (the best trial's outputs). The same command again resumes the sweep; several processes
(machines sharing --storage and the folder) run one sweep together. See docs/glue.md.
"""

import os

from absl import flags

from command_line.flag_rules import check_flags
from command_line.tensorflow_logs import log_at_info
from fileio.errors import run_command
from sweep.settings import SweepSettings
from training.settings import default

FLAGS = flags.FLAGS

flags.DEFINE_string("sweep_dir", None, "Folder of the sweep: its trials, database and report.")
flags.DEFINE_multi_string(
    "grid",
    [],
    "A runner flag and its values, e.g. --grid=learning_rate=5e-5,3e-5,2e-5; repeat for more "
    "flags (every combination runs).",
)
flags.DEFINE_integer(
    "restarts", default(SweepSettings, "restarts"), "Trials per setting, each with another seed."
)
flags.DEFINE_enum(
    "vary",
    default(SweepSettings, "vary"),
    ["all", "init", "data"],
    "What a restart changes: all (--seed: head initialisation, data order and dropout), init "
    "(--init_seed) or data (--data_seed). Restart r uses the command's seed + r.",
)
flags.DEFINE_string(
    "devices",
    default(SweepSettings, "devices"),
    "GPU indices to run trials on at once, one trial per GPU, e.g. 0,1,2,3 (sets "
    "CUDA_VISIBLE_DEVICES of each trial). Empty: one trial at a time on what the runner sees.",
)
flags.DEFINE_string(
    "storage",
    default(SweepSettings, "storage"),
    "Database of the sweep (an Optuna storage URL). Default: sqlite:///<sweep_dir>/sweep.db; "
    "for several machines a server, e.g. postgresql://user:pass@host/db, with --sweep_dir "
    "on a file system they share.",
)
flags.DEFINE_string(
    "study_name", default(SweepSettings, "study_name"), "Name of the sweep in --storage."
)
flags.DEFINE_bool(
    "prune",
    default(SweepSettings, "prune"),
    "Stop the trials whose dev score falls behind the others' at the same step (needs "
    "--eval_every_steps in the runner's command).",
)
flags.DEFINE_enum(
    "pruner",
    default(SweepSettings, "pruner"),
    ["median", "halving"],
    "With --prune: median (below the median of finished trials at the same step) or halving "
    "(successive halving).",
)
flags.DEFINE_enum(
    "keep_checkpoints",
    default(SweepSettings, "keep_checkpoints"),
    ["last", "none", "runner"],
    "Training checkpoints each trial keeps (with the optimizer's slots they are 3x the "
    "model): last (the newest only: --keep_checkpoint_max=1 unless the runner's command sets "
    "it), none (deleted when the trial is complete or pruned; best_checkpoint/ and the "
    "results stay) or runner (as the runner's --keep_checkpoint_max says).",
)


def main(argv):
    log_at_info(FLAGS)
    check_flags(FLAGS)
    from jobs.sweep_run import run_sweep
    from training.settings import settings_from_flags

    settings = settings_from_flags(SweepSettings, FLAGS)
    run_sweep(settings, argv[1:], os.path.dirname(os.path.abspath(__file__)))


if __name__ == "__main__":
    flags.mark_flags_as_required(["sweep_dir"])
    run_command(main)
