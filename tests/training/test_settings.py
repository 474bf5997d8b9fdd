"""TrainConfig.check: one error naming the flag and the fix for settings the loop cannot run."""

import pytest

from tests.helpers.tiny_config import tiny_train_config


def test_batch_must_split_over_replicas_and_micro_batches(tmp_path):
    config = tiny_train_config(tmp_path, train_batch_size=12, num_accumulation_steps=4)
    config.check(num_replicas=1)  # 12 = 1 x 4 x 3
    with pytest.raises(ValueError, match=r"--train_batch_size=12 .* replicas \(2\) times "):
        config.check(num_replicas=2)


@pytest.mark.parametrize(
    "name", ["num_train_steps", "save_checkpoints_steps", "iterations_per_loop", "log_every_steps"]
)
def test_counts_must_be_positive(tmp_path, name):
    config = tiny_train_config(tmp_path, **{name: 0})
    with pytest.raises(ValueError, match=f"--{name} must be at least 1, got 0"):
        config.check(num_replicas=1)


def test_a_command_takes_the_settings_its_run_saved(tmp_path):
    """export_model.py's defaults for what it shares with the runners come from the run's
    flags.txt (written by `flagfile_text`), unless given on its own command line."""
    from absl import flags

    from command_line.earlier_run import take_settings_of_run
    from fileio.flags_file import flagfile_text

    def define(values):
        flags.DEFINE_integer("max_seq_length", 128, "", flag_values=values)
        flags.DEFINE_bool("do_lower_case", True, "", flag_values=values)
        flags.DEFINE_integer("doc_stride", 64, "", flag_values=values)
        flags.DEFINE_string("task_name", None, "", flag_values=values)
        flags.DEFINE_integer("n_best_size", 20, "", flag_values=values)

    run = flags.FlagValues()
    define(run)
    run(["run_classifier.py", "--max_seq_length=24", "--nodo_lower_case", "--task_name=MRPC"])
    (tmp_path / "flags.txt").write_text(flagfile_text(run))

    export = flags.FlagValues()
    define(export)
    export(["export_model.py", "--doc_stride=32"])
    names = ("max_seq_length", "do_lower_case", "doc_stride", "task_name", "n_best_size")
    taken = take_settings_of_run(export, str(tmp_path / "model.ckpt-7"), names)
    # flags.txt records every flag of the run, defaults included (n_best_size).
    assert taken == {
        "max_seq_length": 24,
        "do_lower_case": False,
        "task_name": "MRPC",
        "n_best_size": 20,
    }
    assert export.doc_stride == 32  # given on this command line: kept
    # A checkpoint without a run's flags.txt beside it (Google's own): nothing taken.
    (tmp_path / "google").mkdir()
    assert take_settings_of_run(export, str(tmp_path / "google" / "bert_model.ckpt"), names) == {}
