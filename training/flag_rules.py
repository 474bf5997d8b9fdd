"""The sizes and settings no run can work with, refused at start-up by every runner.

`check_flags(FLAGS)` applies every rule whose flags the runner defines, before the runner
reads a file or creates a directory, and raises one `UserError` naming the flag, its value and
the fix. A rule that only matters for one phase applies when the flag asking for that phase
(`--do_train`, `--do_eval`) is on. Library code keeps its own checks for callers without
flags; these rules make a bad command line fail in the runner's first second, in one place.

TensorFlow-free: create_pretraining_data.py and build_vocab.py use it too.
"""

from fileio.errors import UserError

# (flag, test, requirement, fix, phase): the flag's value must pass `test`; `phase` names the
# flag that must be on for the rule to apply (None: always).
_AT_LEAST_1 = ("at least 1", lambda v: v >= 1)
_AT_LEAST_0 = ("at least 0", lambda v: v >= 0)
_POSITIVE = ("positive", lambda v: v > 0)
_PROBABILITY = ("within [0, 1]", lambda v: 0.0 <= v <= 1.0)
# A dropout rate of 1 drops everything and scales the rest by 1 / 0.
_DROPOUT = ("within [0, 1)", lambda v: 0.0 <= v < 1.0)

_BATCH_FIX = "pass a positive number of examples per batch"
_VALUE_RULES = (
    ("train_batch_size", _AT_LEAST_1, _BATCH_FIX, None),
    ("eval_batch_size", _AT_LEAST_1, _BATCH_FIX, None),
    ("predict_batch_size", _AT_LEAST_1, _BATCH_FIX, None),
    ("batch_size", _AT_LEAST_1, _BATCH_FIX, None),
    ("num_train_epochs", _POSITIVE, "pass the number of passes over the training data", "do_train"),
    ("num_train_steps", _AT_LEAST_1, "pass the number of training steps", "do_train"),
    ("num_warmup_steps", _AT_LEAST_0, "pass 0 for no warmup", "do_train"),
    ("max_eval_steps", _AT_LEAST_1, "pass the number of evaluation batches", "do_eval"),
    ("learning_rate", _AT_LEAST_0, "pass a learning rate such as 5e-5", "do_train"),
    ("warmup_proportion", _PROBABILITY, "pass the share of training to warm up, e.g. 0.1", None),
    ("classifier_dropout_prob", _DROPOUT, "pass a dropout rate such as 0.1, or 0 for none", None),
    ("masked_lm_prob", _PROBABILITY, "pass the share of tokens to mask, e.g. 0.15", None),
    ("short_seq_prob", _PROBABILITY, "pass a probability such as 0.1", None),
    ("save_checkpoints_steps", _AT_LEAST_1, "pass the steps between checkpoints", None),
    ("iterations_per_loop", _AT_LEAST_1, "pass the steps per compiled call", None),
    ("log_every_steps", _AT_LEAST_1, "pass the steps between progress lines", None),
    ("num_accumulation_steps", _AT_LEAST_1, "pass 1 for no accumulation", None),
    ("keep_checkpoint_max", _AT_LEAST_1, "pass how many checkpoints to keep", None),
    ("num_gpus", _AT_LEAST_1, "pass a GPU count, or leave it out to use all", None),
    ("num_cpu_devices", _AT_LEAST_1, "pass a device count such as 2", None),
    ("num_tpu_cores", _AT_LEAST_1, "pass the TPU's core count, e.g. 8", None),
    ("multi_worker_timeout", _POSITIVE, "pass the seconds to wait, e.g. 300", None),
    ("collective_timeout", _POSITIVE, "pass the seconds to wait, e.g. 600, or leave it out", None),
    ("dupe_factor", _AT_LEAST_1, "pass the number of passes over the input, e.g. 10", None),
    ("max_predictions_per_seq", _AT_LEAST_1, "pass about max_seq_length * masked_lm_prob", None),
    ("num_workers", _AT_LEAST_0, "pass 0 for the original's records or N worker processes", None),
    ("n_best_size", _AT_LEAST_1, "pass the size of the n-best list, e.g. 20", None),
    ("max_answer_length", _AT_LEAST_1, "pass the longest answer in pieces, e.g. 30", None),
    ("max_query_length", _AT_LEAST_1, "pass the question pieces to keep, e.g. 64", None),
    ("doc_stride", _AT_LEAST_1, "pass the pieces between window starts, e.g. 128", None),
    ("vocab_size", _AT_LEAST_1, "pass the number of vocabulary lines, e.g. 30522", None),
    ("min_count", _AT_LEAST_1, "pass 1 to keep every character and piece", None),
    ("max_chars", _AT_LEAST_0, "pass 0 to keep every character", None),
    ("max_input_lines", _AT_LEAST_0, "pass 0 to read every line", None),
    ("num_unused", _AT_LEAST_0, "pass 0 for no [unusedN] slots (Google's: 994)", None),
    ("num_iterations", _AT_LEAST_1, "pass the learner's rounds, e.g. 4", None),
    ("max_token_chars", _AT_LEAST_1, "pass the longest piece in characters, e.g. 32", None),
    ("progress_interval_s", _POSITIVE, "pass the seconds between progress lines, e.g. 10", None),
)

# Flags every value of which can work: seeds, thresholds. Listed so that a new numeric flag
# without a rule is noticed (tests/training/test_flag_rules.py reads the runners' flags).
FREE_FLAGS = frozenset({"seed", "random_seed", "null_score_diff_threshold"})


def checked_flags():
    """The numeric flags some rule checks (for the test that every runner's flag is covered)."""
    return {rule[0] for rule in _VALUE_RULES} | {"max_seq_length"}


def _values(flag_values, overrides):
    if isinstance(flag_values, dict):
        values = dict(flag_values)
    else:
        values = {name: flag_values[name].value for name in flag_values}
    values.update(overrides)
    return values


def _task(values):
    """export_model.py's --task, or None for the runners that are one task."""
    return values.get("task")


def _check_value(values, name, rule, fix, phase):
    value = values.get(name)
    if value is None or (phase is not None and not values.get(phase, True)):
        return
    requirement, test = rule
    # NaN fails every test, as it should.
    if not test(value):
        when = f" with --{phase}" if phase else ""
        raise UserError(f"--{name}={value} must be {requirement}{when}: {fix}.")


def _check_sequence_length(values):
    """--max_seq_length against what one sequence must hold, per task."""
    length = values.get("max_seq_length")
    if length is None:
        return
    task = _task(values)
    if "max_query_length" in values and task in (None, "squad"):
        _check_squad_window(values, length)
    elif "max_predictions_per_seq" in values:
        # Pre-training: [CLS] A [SEP] B [SEP] with at least one piece each for A and B.
        if length < 5:
            raise UserError(
                f"--max_seq_length={length} is too small for a pre-training pair ([CLS], one "
                "piece of A, [SEP], one piece of B, [SEP]): pass at least 5 (128 is usual)."
            )
        predictions = values.get("max_predictions_per_seq")
        if predictions is not None and predictions > length:
            raise UserError(
                f"--max_predictions_per_seq={predictions} is larger than the sequence "
                f"(--max_seq_length={length}): pass at most {length}, usually about "
                "max_seq_length * masked_lm_prob (20 for 128)."
            )
    elif length < 3:
        raise UserError(
            f"--max_seq_length={length} is too small to hold [CLS], one piece and [SEP]: "
            "pass at least 3 (128 is usual)."
        )
    if "doc_stride" in values and "max_query_length" not in values or task == "ner":
        _check_ner_window(values, length)


def _check_squad_window(values, length):
    """The question, [CLS] and two [SEP]s leave `max_seq_length - max_query_length - 3`
    pieces of the document at least; the stride must move within them."""
    query = values["max_query_length"]
    if query is None:
        return
    if length <= query + 3:
        # The original's sentence first: scripts may look for it.
        raise UserError(
            f"The max_seq_length ({length}) must be greater than max_query_length ({query}) "
            f"+ 3: --max_seq_length={length} leaves no room for the document after a question "
            f"of {query} pieces, [CLS] and two [SEP]s; raise --max_seq_length or lower "
            "--max_query_length."
        )
    _check_stride(values.get("doc_stride"), length - query - 3, f"{length} - {query} - 3")


def _check_ner_window(values, length):
    """A sentence window holds `max_seq_length - 2` pieces besides [CLS] and [SEP]."""
    if length >= 3:
        _check_stride(values.get("doc_stride"), length - 2, f"{length} - 2")


def _check_stride(stride, window, arithmetic):
    # A window of one piece can only move by one.
    if stride is not None and stride > max(window - 1, 1):
        raise UserError(
            f"--doc_stride={stride} must be smaller than the window it strides ({window} "
            f"document pieces = {arithmetic}), or consecutive windows share no context: pass "
            f"--doc_stride={max(window // 2, 1)} or less, or raise --max_seq_length."
        )


def check_flags(flag_values, **overrides):
    """Raises a `UserError` naming the flag if a size or setting of the runner cannot work.

    Applies every rule whose flag the runner defines (a flag left at None is not checked).
    Call it first in `main`, before anything is read or written.

    Args:
        flag_values: the runner's parsed absl `FlagValues`, or a dict of flag values.
        **overrides: values the runner resolved itself (e.g. a default that depends on --task).

    Raises:
        UserError: e.g. "--train_batch_size=0 must be at least 1: pass a positive number of
            examples per batch."
    """
    values = _values(flag_values, overrides)
    for name, rule, fix, phase in _VALUE_RULES:
        if name in values:
            _check_value(values, name, rule, fix, phase)
    _check_sequence_length(values)
