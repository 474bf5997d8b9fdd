"""command_line.flag_rules: the sizes and settings every runner refuses at start-up."""

import glob
import os
import re

import pytest

from command_line import flag_rules
from command_line.flag_rules import check_flags
from fileio.errors import UserError
from tests.helpers.paths import REPO

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
        ({"do_eval": True, "max_eval_steps": 0}, "--max_eval_steps=0 must be at least 1"),
        ({"warmup_proportion": float("nan")}, "--warmup_proportion=nan must be a number"),
        ({"do_train": True, "learning_rate": float("nan")}, "--learning_rate=nan must be a"),
        ({"masked_lm_prob": float("nan")}, "--masked_lm_prob=nan must be a number"),
        ({"classifier_dropout_prob": 1.0}, "--classifier_dropout_prob=1.0 must be within [0, 1)"),
        ({"save_checkpoints_steps": 0}, "--save_checkpoints_steps=0 must be at least 1"),
        ({"iterations_per_loop": 0}, "--iterations_per_loop=0 must be at least 1"),
        ({"num_accumulation_steps": 0}, "--num_accumulation_steps=0 must be at least 1"),
        ({"max_predictions_per_seq": -1}, "--max_predictions_per_seq=-1 must be at least 0"),
        ({"max_query_length": -1}, "--max_query_length=-1 must be at least 0"),
        # The original's windows never move on with a stride of 0: it loops forever.
        ({**_SQUAD, "doc_stride": 0}, "--doc_stride=0 must be at least 1"),
        ({**_NER, "doc_stride": -3}, "--doc_stride=-3 must be at least 1"),
        ({"num_workers": -1}, "--num_workers=-1 must be at least 0"),
        ({"max_seq_length": 1}, "--max_seq_length=1 is too small to hold [CLS] and [SEP]"),
        (
            {**_PRETRAINING, "max_seq_length": 4},
            "--max_seq_length=4 is too small for a pre-training pair",
        ),
        (
            {**_SQUAD, "max_seq_length": 67},
            "The max_seq_length (67) must be greater than max_query_length (64) + 3: ",
        ),
    ],
)
def test_a_setting_that_cannot_work_is_refused(values, message):
    with pytest.raises(UserError) as raised:
        check_flags(values)
    assert message in str(raised.value)
    # One sentence, ending in a full stop: the last line of the runner's stderr.
    assert "\n" not in str(raised.value) and str(raised.value).endswith(".")


@pytest.mark.parametrize(
    "values,warning",
    [
        # run_squad.py --max_seq_length=128 with the default --doc_stride=128: the original
        # cuts adjacent windows.
        (
            {**_SQUAD, "max_seq_length": 128},
            "--doc_stride=128 is not smaller than the window it strides (61 document pieces = "
            "128 - 64 - 3): consecutive windows are adjacent and share no context, so the "
            "pieces at their edges are read without what follows or precedes them; pass "
            "--doc_stride=30 (half the window) for overlap.",
        ),
        ({**_SQUAD, "doc_stride": 317}, "(317 document pieces = 384 - 64 - 3)"),
        ({**_NER, "max_seq_length": 64}, "--doc_stride=64 is not smaller than the window it"),
        # export_model.py: the rules of the --task it exports.
        ({**_SQUAD, "max_seq_length": 128, "doc_stride": 200, "task": "ner"}, "(126 document"),
        ({**_SQUAD, "doc_stride": 400, "task": "squad"}, "(317 document pieces = 384 - 64 - 3)"),
        ({"do_train": True, "num_warmup_steps": -1}, "--num_warmup_steps=-1 runs as in the "),
        ({"do_train": True, "learning_rate": -1e-5}, "the updates climb the loss"),
        ({"warmup_proportion": 1.5}, "--warmup_proportion=1.5 runs as in the original, but"),
        ({"masked_lm_prob": -0.1}, "--masked_lm_prob=-0.1 runs as in the original"),
        ({"short_seq_prob": 2.0}, "--short_seq_prob=2.0 runs as in the original"),
        ({"dupe_factor": 0}, "no pass is made over the input and no instance is written"),
        ({"n_best_size": 0}, "every answer is the original's placeholder 'empty'"),
        ({"max_answer_length": 0}, "every answer is the original's placeholder 'empty'"),
        ({**_SQUAD, "max_query_length": 0}, "the question is dropped"),
        ({"max_seq_length": 2}, "--max_seq_length=2 holds [CLS] and [SEP] only"),
        ({**_PRETRAINING, "max_predictions_per_seq": 0}, "no piece is masked"),
        (
            {**_PRETRAINING, "max_predictions_per_seq": 129},
            "--max_predictions_per_seq=129 is larger than the sequence (--max_seq_length=128)",
        ),
        # Options that the rest of the command line leaves without effect.
        ({"eval_every_steps": 10, "do_train": True, "do_eval": False}, "needs --do_train and"),
        ({"eval_every_steps": 10, "do_train": False, "do_eval": True}, "needs --do_train and"),
        ({"adam_bias_correction": True, "optimizer": "lamb"}, "lamb always corrects the bias"),
    ],
)
def test_a_setting_the_original_ran_runs_with_one_warning(values, warning, caplog):
    """A check refuses only what cannot run: what the original ran runs, with a warning."""
    caplog.set_level("WARNING", logger="absl")
    warnings = check_flags(values)
    assert len(warnings) == 1 and warning in warnings[0], warnings
    assert warnings[0].endswith(".") and "\n" not in warnings[0]
    assert [r.getMessage() for r in caplog.records if r.name == "absl"] == warnings


@pytest.mark.parametrize(
    "values",
    [
        # The runners' defaults and the documented command lines.
        {**_SQUAD, "n_best_size": 20, "max_answer_length": 30, "warmup_proportion": 0.1},
        {**_NER, "classifier_dropout_prob": 0.1, "train_batch_size": 32},
        {**_PRETRAINING, "short_seq_prob": 0.1, "dupe_factor": 10, "num_workers": 0},
        {"max_seq_length": 3, "batch_size": 1},
        # A one-piece window can only move by one.
        {**_NER, "max_seq_length": 3, "doc_stride": 1},
        # A phase that is not asked for is not checked.
        {"do_train": False, "num_train_epochs": 0.0, "num_train_steps": 0},
        {"do_eval": False, "max_eval_steps": 0},
        {"do_train": False, "learning_rate": -1.0, "num_warmup_steps": -5},
        # Unset (None) flags are not checked; export_model's classifier reads doc_stride only
        # with --long_inputs=windows.
        {"max_seq_length": None, "doc_stride": None, "num_gpus": None},
        {**_SQUAD, "max_seq_length": 16, "doc_stride": 200, "task": "classifier"},
        {"eval_every_steps": 10, "do_train": True, "do_eval": True},
        {"eval_every_steps": 0, "do_train": True, "do_eval": False},
        {"adam_bias_correction": True, "optimizer": "adamw"},
    ],
)
def test_settings_that_work_pass_without_a_warning(values):
    assert check_flags(values) == []


def test_a_windowed_classifier_export_checks_its_stride():
    values = {**_SQUAD, "max_seq_length": 16, "doc_stride": 200, "task": "classifier"}
    warnings = check_flags({**values, "long_inputs": "windows"})
    assert "--doc_stride=200 is not smaller than the window it strides (14" in warnings[0]


def test_check_values_applies_the_named_rows_only():
    # run_distill.py's early check: the distillation values, not the teacher's flags.
    values = {"temperature": 0.0, "train_batch_size": 0}
    with pytest.raises(UserError, match=r"^--temperature=0.0 must be positive: pass the"):
        flag_rules.check_values(values, ("temperature", "distill_alpha"))
    values = {"temperature": 2.0, "distill_alpha": 1.5, "train_batch_size": 0}
    with pytest.raises(UserError, match=r"^--distill_alpha=1.5 must be within \[0, 1\]"):
        flag_rules.check_values(values, ("temperature", "distill_alpha"))
    assert flag_rules.check_values({"train_batch_size": 0}, ("temperature",)) == {
        "train_batch_size": 0
    }


def test_overrides_are_checked_in_place_of_the_flags():
    with pytest.raises(UserError, match=r"--doc_stride=0 must be at least 1"):
        check_flags({**_NER, "doc_stride": None, "task": "ner"}, max_seq_length=64, doc_stride=0)
    warnings = check_flags({**_NER, "task": "ner"}, max_seq_length=64, doc_stride=62)
    assert "--doc_stride=62 is not smaller than the window it strides (62" in warnings[0]


@pytest.mark.parametrize(
    "default, window, expected",
    [(64, 126, 64), (64, 62, 31), (128, 61, 30), (64, 1, 64), (64, 64, 32)],
)
def test_a_default_stride_always_overlaps_its_windows(default, window, expected):
    stride = flag_rules.default_stride(default, window)
    assert stride == expected
    assert stride < window or window <= 1


def _numeric_flags_of_the_runners():
    """(file, flag) for every integer/float flag the runners and command_line/ define."""
    sources = glob.glob(os.path.join(REPO, "*.py")) + glob.glob(
        os.path.join(REPO, "command_line", "*.py")
    )
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
