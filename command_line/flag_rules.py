"""The sizes and settings no run can work with, refused at start-up by every runner, and the
ones the original ran although they are rarely meant, which run with a warning.

`check_flags(FLAGS)` applies every rule whose flags the runner defines, before the runner
reads a file or creates a directory, and raises one `UserError` naming the flag, its value and
the fix. A rule that only matters for one phase applies when the flag asking for that phase
(`--do_train`, `--do_eval`) is on. Library code keeps its own checks for callers without
flags; these rules make a bad command line fail in the runner's first second, in one place.

A value is refused only when no run can work with it (the original crashed, looped forever or
refused it too), never because it is unusual: a command line the original ran still runs, and
`check_flags` logs one warning saying what such a value does and what is usually meant.

TensorFlow-free: create_pretraining_data.py and build_vocab.py use it too.
"""

from absl import logging

from data.windows import half_window_stride
from fileio import reading
from fileio.errors import UserError

# (flag, test, requirement, fix, phase): the flag's value must pass `test`; `phase` names the
# flag that must be on for the rule to apply (None: always).
_AT_LEAST_1 = ("at least 1", lambda v: v >= 1)
_AT_LEAST_0 = ("at least 0", lambda v: v >= 0)
_OFF_OR_ABOVE = ("0 (off) or above", _AT_LEAST_0[1])
_STEPS = ("at least 1, or auto", lambda v: v == "auto" or v >= 1)
_POSITIVE = ("positive", lambda v: v > 0)
_PORT = ("0 to 65535", lambda v: 0 <= v <= 65535)
_PROBABILITY = ("within [0, 1]", lambda v: 0.0 <= v <= 1.0)
# NaN fails every comparison; the original's arithmetic (int(), round()) raised on it.
_A_NUMBER = ("a number", lambda v: v == v)
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
    ("max_eval_steps", _AT_LEAST_1, "pass the number of evaluation batches", "do_eval"),
    ("learning_rate", _A_NUMBER, "pass a learning rate such as 5e-5", "do_train"),
    ("warmup_proportion", _A_NUMBER, "pass the share of training to warm up, e.g. 0.1", None),
    ("classifier_dropout_prob", _DROPOUT, "pass a dropout rate such as 0.1, or 0 for none", None),
    ("masked_lm_prob", _A_NUMBER, "pass the share of tokens to mask, e.g. 0.15", None),
    ("save_checkpoints_steps", _AT_LEAST_1, "pass the steps between checkpoints", None),
    ("iterations_per_loop", _AT_LEAST_1, "pass the steps per compiled call", None),
    ("log_every_steps", _AT_LEAST_1, "pass the steps between progress lines", None),
    ("eval_every_steps", _AT_LEAST_0, "pass the steps between dev evaluations, or 0", None),
    ("restarts", _AT_LEAST_1, "pass how many trials each setting of the grid gets", None),
    ("num_accumulation_steps", _STEPS, "pass 1 for no accumulation, or auto", None),
    ("keep_checkpoint_max", _AT_LEAST_1, "pass how many checkpoints to keep", None),
    ("num_gpus", _AT_LEAST_1, "pass a GPU count, or leave it out to use all", None),
    ("num_cpu_devices", _AT_LEAST_1, "pass a device count such as 2", None),
    ("num_tpu_cores", _AT_LEAST_1, "pass the TPU's core count, e.g. 8", None),
    ("multi_worker_timeout", _POSITIVE, "pass the seconds to wait, e.g. 300", None),
    ("collective_timeout", _POSITIVE, "pass the seconds to wait, e.g. 600, or leave it out", None),
    ("max_predictions_per_seq", _AT_LEAST_0, "pass about max_seq_length * masked_lm_prob", None),
    ("num_workers", _AT_LEAST_0, "pass 0 for the original's records or N worker processes", None),
    ("output_shards", _AT_LEAST_0, "pass 0 to list the files, or N shards of one prefix", None),
    ("head_tokens", _AT_LEAST_0, "pass the pieces to keep from the head, e.g. 128", None),
    ("max_query_length", _AT_LEAST_0, "pass the question pieces to keep, e.g. 64", None),
    # The original's windows start `min(length, doc_stride)` pieces apart: 0 never moves on.
    ("doc_stride", _AT_LEAST_1, "pass the pieces between window starts, e.g. 128", None),
    ("vocab_size", _AT_LEAST_1, "pass the number of vocabulary lines, e.g. 30522", None),
    ("min_count", _AT_LEAST_1, "pass 1 to keep every character and piece", None),
    ("max_chars", _AT_LEAST_0, "pass 0 to keep every character", None),
    ("max_input_lines", _AT_LEAST_0, "pass 0 to read every line", None),
    ("num_unused", _AT_LEAST_0, "pass 0 for no [unusedN] slots (Google's: 994)", None),
    ("port", _PORT, "pass a TCP port, or 0 for any free one", None),
    ("max_batch_size", _AT_LEAST_1, "pass the instances per model call, e.g. 32", None),
    ("batch_timeout_ms", _AT_LEAST_0, "pass the milliseconds a batch waits for more, or 0", None),
    ("num_threads", _AT_LEAST_1, "pass a thread count, or leave it out for all cores", None),
    ("memory_budget_gb", _POSITIVE, "pass one device's memory in GB, e.g. 16", None),
    (
        "min_label_positives",
        _AT_LEAST_0,
        "pass the positive dev examples a label needs for a threshold of its own, e.g. 5",
        None,
    ),
    ("num_iterations", _AT_LEAST_1, "pass the learner's rounds, e.g. 4", None),
    ("max_token_chars", _AT_LEAST_1, "pass the longest piece in characters, e.g. 32", None),
    ("progress_interval_s", _POSITIVE, "pass the seconds between progress lines, e.g. 10", None),
    ("temperature", _POSITIVE, "pass the distillation temperature, e.g. 2", None),
    ("distill_alpha", _PROBABILITY, "pass the soft targets' weight, e.g. 0.5", None),
    ("hidden_loss_weight", _OFF_OR_ABOVE, "pass a weight such as 1", None),
)

# (flag, test, what a value failing `test` does, what is usually meant, phase): values the
# original ran, which run here the same way after one warning.
_ORIGINAL_RAN = (
    ("num_warmup_steps", _AT_LEAST_0[1], "no step warms up", "0 for no warmup", "do_train"),
    (
        "learning_rate",
        _AT_LEAST_0[1],
        "the updates climb the loss instead of descending it",
        "a positive rate such as 5e-5",
        "do_train",
    ),
    (
        "warmup_proportion",
        _PROBABILITY[1],
        "warmup lasts int(steps * proportion) steps, none when that is negative, the whole run "
        "when it is above the step count",
        "a share within [0, 1] such as 0.1",
        None,
    ),
    (
        "masked_lm_prob",
        _PROBABILITY[1],
        "each sequence masks round(length * prob) pieces, at least 1 and at most "
        "--max_predictions_per_seq",
        "a share within [0, 1] such as 0.15",
        None,
    ),
    (
        "short_seq_prob",
        _PROBABILITY[1],
        "it acts as 0 below 0 and as 1 above 1",
        "a probability such as 0.1",
        None,
    ),
    (
        "dupe_factor",
        _AT_LEAST_1[1],
        "no pass is made over the input and no instance is written",
        "the number of passes, e.g. 10",
        None,
    ),
    (
        "max_predictions_per_seq",
        _AT_LEAST_1[1],
        "no piece is masked and the masked LM learns nothing",
        "about max_seq_length * masked_lm_prob (20 for 128)",
        None,
    ),
    (
        "n_best_size",
        _AT_LEAST_1[1],
        "no span is a candidate and every answer is the original's placeholder 'empty'",
        "the size of the n-best list, e.g. 20",
        None,
    ),
    (
        "max_answer_length",
        _AT_LEAST_1[1],
        "no span is short enough and every answer is the original's placeholder 'empty'",
        "the longest answer in pieces, e.g. 30",
        None,
    ),
    (
        "max_query_length",
        _AT_LEAST_1[1],
        "the question is dropped and the model reads the document alone",
        "the question pieces to keep, e.g. 64",
        None,
    ),
)

# Flags every value of which can work: seeds, thresholds. Listed so that a new numeric flag
# without a rule is noticed (tests/training/test_flag_rules.py reads the runners' flags).
FREE_FLAGS = frozenset(
    {"seed", "init_seed", "data_seed", "random_seed", "null_score_diff_threshold"}
)


def checked_flags():
    """The numeric flags some rule checks (for the test that every runner's flag is covered)."""
    names = {rule[0] for rule in _VALUE_RULES} | {rule[0] for rule in _ORIGINAL_RAN}
    return names | {"max_seq_length"}


def _values(flag_values, overrides):
    if isinstance(flag_values, dict):
        values = dict(flag_values)
    else:
        values = {name: flag_values[name].value for name in flag_values}
    values.update(overrides)
    return values


def _applies(values, name, phase):
    return values.get(name) is not None and (phase is None or values.get(phase, True))


def _check_value(values, name, rule, fix, phase):
    if not _applies(values, name, phase):
        return
    requirement, test = rule
    # NaN fails every test, as it should.
    value = values[name]
    if not test(value):
        when = f" with --{phase}" if phase else ""
        raise UserError(f"--{name}={value} must be {requirement}{when}: {fix}.")


def _unusual_values(values):
    """The warnings for values the original ran although they are rarely meant."""
    for name, test, consequence, meant, phase in _ORIGINAL_RAN:
        if _applies(values, name, phase) and not test(values[name]):
            yield (
                f"--{name}={values[name]} runs as in the original, but {consequence}; unless "
                f"that is what you mean, pass {meant}."
            )


def _unused(values):
    """Warnings for options the rest of the command line leaves without effect."""
    if values.get("eval_every_steps") and not (values.get("do_train") and values.get("do_eval")):
        yield (
            f"--eval_every_steps={values['eval_every_steps']} is ignored: it evaluates during "
            "training, which needs --do_train and --do_eval."
        )
    if values.get("adam_bias_correction") and values.get("optimizer") == "lamb":
        yield "--adam_bias_correction is ignored: --optimizer=lamb always corrects the bias."


def _check_sequence_length(values):
    """--max_seq_length against what one sequence must hold, per task; yields warnings."""
    length = values.get("max_seq_length")
    if length is None:
        return
    task = values.get("task")  # export_model.py's; None for the runners that are one task
    if "max_query_length" in values and task in (None, "squad"):
        yield from _check_squad_window(values, length)
    elif "max_predictions_per_seq" in values:
        # Pre-training: [CLS] A [SEP] B [SEP] with at least one piece each for A and B (the
        # original's truncation asserts as much).
        if length < 5:
            raise UserError(
                f"--max_seq_length={length} is too small for a pre-training pair ([CLS], one "
                "piece of A, [SEP], one piece of B, [SEP]): pass at least 5 (128 is usual)."
            )
        predictions = values.get("max_predictions_per_seq")
        if predictions is not None and predictions > length:
            yield (
                f"--max_predictions_per_seq={predictions} is larger than the sequence "
                f"(--max_seq_length={length}): the records carry "
                f"{predictions - length} or more padding slots that are never used; "
                f"pass at most {length}, usually about max_seq_length * masked_lm_prob."
            )
    elif length < 2:
        raise UserError(
            f"--max_seq_length={length} is too small to hold [CLS] and [SEP]: pass at least 3 "
            "(128 is usual)."
        )
    elif length == 2:
        yield (
            "--max_seq_length=2 holds [CLS] and [SEP] only: no piece of any text reaches the "
            "model (and sentence pairs cannot be packed); pass at least 3 (128 is usual)."
        )
    # run_classifier's windows and export_model's NER and windowed classifier: S - 2 pieces.
    windowed = task == "ner" or (task == "classifier" and values.get("long_inputs") == "windows")
    if "doc_stride" in values and "max_query_length" not in values or windowed:
        yield from _check_ner_window(values, length)


def _check_squad_window(values, length):
    """The question, [CLS] and two [SEP]s leave `max_seq_length - max_query_length - 3`
    pieces of the document at least; the stride moves within them."""
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
    yield from _check_stride(
        values.get("doc_stride"), squad_window(length, query), f"{length} - {query} - 3"
    )


def _check_ner_window(values, length):
    """A sentence window holds `max_seq_length - 2` pieces besides [CLS] and [SEP]."""
    if length >= 3:
        yield from _check_stride(values.get("doc_stride"), ner_window(length), f"{length} - 2")


def _check_stride(stride, window, arithmetic):
    if stride is not None and stride >= window and window > 1:
        # The original accepts it: windows start min(length, stride) apart, so they are
        # adjacent and no piece is lost, only the shared context.
        yield (
            f"--doc_stride={stride} is not smaller than the window it strides ({window} "
            f"document pieces = {arithmetic}): consecutive windows are adjacent and share no "
            f"context, so the pieces at their edges are read without what follows or precedes "
            f"them; pass --doc_stride={half_window_stride(window)} (half the window) for overlap."
        )


def squad_window(max_seq_length, max_query_length):
    """The document pieces of a SQuAD window after the longest question, [CLS] and 2 [SEP]s."""
    return max_seq_length - max_query_length - 3


def ner_window(max_seq_length):
    """The pieces of a sentence window besides [CLS] and [SEP] (NER, classifier windows)."""
    return max_seq_length - 2


def default_stride(default, window):
    """The stride a run takes when --doc_stride is not given: the task's `default` if it is
    smaller than `window` (the windows then overlap), else half the window.

    A project default never makes a legal --max_seq_length warn; the value chosen is logged.
    """
    if default < window or window <= 1:
        return default
    stride = half_window_stride(window)
    logging.info(
        "--doc_stride not given: %d, half of the %d-piece window (the default %d would leave "
        "consecutive windows no shared context).",
        stride,
        window,
        default,
    )
    return stride


_PHASES = {"train": "do_train", "dev": "do_eval", "test": "do_predict"}


def check_input_files(flag_values, files):
    """Raises a `UserError` naming the first of `files` that does not exist, before anything
    is read or written, so that a missing file ends the run in its first second.

    Args:
        flag_values: the parsed absl `FlagValues`.
        files: (path, flag, phase) triples: the flag the path comes from (e.g. "data_dir") and
            the --do_* flag that reads it ("do_train", ...), or None for a file every run reads.

    Raises:
        UserError: e.g. "/data/ner/dev.txt does not exist: --do_eval reads it from
            --data_dir=/data/ner; put the file there, or leave --do_eval off."
    """
    for path, flag, phase in files:
        if reading.is_file(path):
            continue
        given = f"--{flag}={_values(flag_values, {})[flag]}"
        if phase is None:
            raise UserError(f"{path} does not exist: {given} names it; pass a file that exists.")
        where = f"from {given}" if path != _values(flag_values, {})[flag] else f"as {given}"
        raise UserError(
            f"{path} does not exist: --{phase} reads it {where}; put the file there, or leave "
            f"--{phase} off."
        )


def requested_splits(flag_values):
    """(split, phase) of the splits ("train", "dev", "test") whose --do_* flag is on."""
    values = _values(flag_values, {})
    return [(split, phase) for split, phase in _PHASES.items() if values.get(phase)]


def check_values(flag_values, names=None, **overrides):
    """`check_flags`'s refusals of single values, of `names` (None: all); returns the values."""
    values = _values(flag_values, overrides)
    for name, rule, fix, phase in _VALUE_RULES:
        if name in values and (names is None or name in names):
            _check_value(values, name, rule, fix, phase)
    return values


def check_flags(flag_values, **overrides):
    """Raises a `UserError` naming the flag if a size or setting of the runner cannot work.

    Applies every rule whose flag the runner defines (a flag left at None is not checked).
    Call it first in `main`, before anything is read or written.

    Args:
        flag_values: the runner's parsed absl `FlagValues`, or a dict of flag values.
        **overrides: values the runner resolved itself (e.g. a default that depends on --task).

    Returns:
        The warnings logged, one sentence each, for values the original ran although they are
        rarely meant (e.g. a --doc_stride as long as its window).

    Raises:
        UserError: e.g. "--train_batch_size=0 must be at least 1: pass a positive number of
            examples per batch."
    """
    values = check_values(flag_values, **overrides)
    warnings = [*_unusual_values(values), *_check_sequence_length(values), *_unused(values)]
    for warning in warnings:
        logging.warning("%s", warning)
    return warnings
