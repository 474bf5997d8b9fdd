"""training.flag_rules: the sizes and settings every runner refuses at start-up."""

import glob
import os
import re

import pytest

from fileio.errors import UserError
from tests.helpers.paths import REPO
from training import flag_rules
from training.flag_rules import check_flags

# The defaults of the runners that define these flags (run_squad's window and lengths).
_SQUAD = {"max_seq_length": 384, "max_query_length": 64, "doc_stride": 128}
_NER = {"max_seq_length": 128, "doc_stride": 64}
_PRETRAINING = {"max_seq_length": 128, "max_predictions_per_seq": 20, "masked_lm_prob": 0.15}


@pytest.mark.parametrize(
    "values,message",
    [
        ({"train_batch_size": 0}, "--train_batch_size=0 must be at least 1: pass a positive"),
        ({"eval_batch_size": -8}, "--eval_batch_size=-8 must be at least 1: pass a positive"),
        ({"predict_batch_size": 0}, "--predict_batch_size=0 must be at least 1"),
        ({"batch_size": 0}, "--batch_size=0 must be at least 1"),
        (
            {"do_train": True, "num_train_epochs": 0.0},
            "--num_train_epochs=0.0 must be positive with --do_train: pass the number of passes",
        ),
        ({"do_train": True, "num_train_steps": 0}, "--num_train_steps=0 must be at least 1"),
        ({"do_train": True, "num_warmup_steps": -1}, "--num_warmup_steps=-1 must be at least 0"),
        ({"do_eval": True, "max_eval_steps": 0}, "--max_eval_steps=0 must be at least 1"),
        ({"warmup_proportion": 1.5}, "--warmup_proportion=1.5 must be within [0, 1]"),
        ({"warmup_proportion": float("nan")}, "--warmup_proportion=nan must be within [0, 1]"),
        ({"classifier_dropout_prob": 1.0}, "--classifier_dropout_prob=1.0 must be within [0, 1)"),
        ({"masked_lm_prob": -0.1}, "--masked_lm_prob=-0.1 must be within [0, 1]"),
        ({"short_seq_prob": 2.0}, "--short_seq_prob=2.0 must be within [0, 1]"),
        ({"save_checkpoints_steps": 0}, "--save_checkpoints_steps=0 must be at least 1"),
        ({"iterations_per_loop": 0}, "--iterations_per_loop=0 must be at least 1"),
        ({"num_accumulation_steps": 0}, "--num_accumulation_steps=0 must be at least 1"),
        ({"dupe_factor": 0}, "--dupe_factor=0 must be at least 1"),
        ({"n_best_size": 0}, "--n_best_size=0 must be at least 1"),
        ({"max_answer_length": 0}, "--max_answer_length=0 must be at least 1"),
        ({"num_workers": -1}, "--num_workers=-1 must be at least 0"),
        ({"max_seq_length": 2}, "--max_seq_length=2 is too small to hold [CLS], one piece and"),
        (
            {**_PRETRAINING, "max_seq_length": 4},
            "--max_seq_length=4 is too small for a pre-training pair",
        ),
        (
            {**_PRETRAINING, "max_predictions_per_seq": 129},
            "--max_predictions_per_seq=129 is larger than the sequence (--max_seq_length=128)",
        ),
        (
            {**_SQUAD, "max_seq_length": 67},
            "The max_seq_length (67) must be greater than max_query_length (64) + 3: ",
        ),
        (
            {**_SQUAD, "doc_stride": 317},
            "--doc_stride=317 must be smaller than the window it strides (317 document pieces "
            "= 384 - 64 - 3), or consecutive windows share no context: pass --doc_stride=158 or "
            "less, or raise --max_seq_length.",
        ),
        (
            {**_NER, "max_seq_length": 64},
            "--doc_stride=64 must be smaller than the window it strides (62 document pieces = "
            "64 - 2)",
        ),
        # export_model.py: the rules of the --task it exports.
        (
            {**_SQUAD, "max_seq_length": 128, "doc_stride": 200, "task": "ner"},
            "--doc_stride=200 must be smaller than the window it strides (126 document pieces",
        ),
        ({**_SQUAD, "doc_stride": 400, "task": "squad"}, "(317 document pieces = 384 - 64 - 3)"),
    ],
)
def test_a_setting_that_cannot_work_is_refused(values, message):
    with pytest.raises(UserError) as raised:
        check_flags(values)
    assert message in str(raised.value)
    # One sentence, ending in a full stop: the last line of the runner's stderr.
    assert "\n" not in str(raised.value) and str(raised.value).endswith(".")


@pytest.mark.parametrize(
    "values",
    [
        # The runners' defaults and the documented command lines.
        {**_SQUAD, "n_best_size": 20, "max_answer_length": 30, "warmup_proportion": 0.1},
        {**_NER, "classifier_dropout_prob": 0.1, "train_batch_size": 32},
        {**_PRETRAINING, "short_seq_prob": 0.1, "dupe_factor": 10, "num_workers": 0},
        {"max_seq_length": 3, "batch_size": 1},
        {**_NER, "max_seq_length": 3, "doc_stride": 1},
        # A phase that is not asked for is not checked.
        {"do_train": False, "num_train_epochs": 0.0, "num_train_steps": 0},
        {"do_eval": False, "max_eval_steps": 0},
        # Unset (None) flags are not checked; export_model's classifier ignores doc_stride.
        {"max_seq_length": None, "doc_stride": None, "num_gpus": None},
        {**_SQUAD, "max_seq_length": 16, "doc_stride": 200, "task": "classifier"},
    ],
)
def test_settings_that_work_pass(values):
    check_flags(values)


def test_overrides_are_checked_in_place_of_the_flags():
    with pytest.raises(UserError, match=r"--doc_stride=62 must be smaller"):
        check_flags({**_NER, "doc_stride": None, "task": "ner"}, max_seq_length=64, doc_stride=62)


def _numeric_flags_of_the_runners():
    """(file, flag) for every integer/float flag the runners and training/flags.py define."""
    sources = glob.glob(os.path.join(REPO, "*.py")) + [os.path.join(REPO, "training", "flags.py")]
    found = []
    for path in sources:
        text = open(path, encoding="utf-8").read()
        for name in re.findall(r'DEFINE_(?:integer|float)\(\s*"(\w+)"', text):
            found.append((os.path.basename(path), name))
    return found


def test_every_numeric_runner_flag_has_a_rule():
    flags = _numeric_flags_of_the_runners()
    assert len(flags) > 40  # the regular expression still finds the definitions
    covered = flag_rules.checked_flags() | flag_rules.FREE_FLAGS
    assert [(f, n) for f, n in flags if n not in covered] == []
