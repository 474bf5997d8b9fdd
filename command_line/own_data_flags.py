"""run_classifier.py's flags for data of the user's own, and the processor they choose.

Three sources of examples, chosen by the command line:

* `--task_name` a GLUE or XNLI name: the task's files in `--data_dir`, exactly as the original;
* `--processor=FILE.py:Class`: a `DataProcessor` written for the original run_classifier.py,
  unchanged (`data.own_data.processor_file`);
* anything else: CSV, TSV or JSON Lines files (`data.own_data.file_processor`).

TensorFlow-free: the files are read and checked here, before TensorFlow loads.
"""

from absl import flags, logging

from data.classification.eval_results import parse_decision_threshold
from data.glue.processors import PROCESSORS, canonical_task_name, get_processor
from data.own_data.file_processor import PROBLEM_TYPES, FileProcessor, OwnDataFiles
from data.own_data.labels import earlier_run_folders
from data.own_data.table_reader import FILE_FORMATS
from training.settings import default, settings_from_flags

# The flags that describe files of the user's own (unused with a GLUE task or --processor).
FILE_FLAGS = (
    "train_file",
    "dev_file",
    "test_file",
    "file_format",
    "encoding",
    "text_a_column",
    "text_b_column",
    "label_column",
    "label_columns",
    "label_delimiter",
    "problem_type",
    "labels",
    "label_file",
)


def define_own_data_flags():
    """Defines the own-data flags, their defaults `OwnDataFiles`'."""

    def own(name):
        return default(OwnDataFiles, name)

    flags.DEFINE_string(
        "processor",
        None,
        "FILE.py:ClassName: a DataProcessor subclass written for the original "
        "run_classifier.py, read from its own file (instead of --task_name's).",
    )
    for split in ("train", "dev", "test"):
        flags.DEFINE_string(
            f"{split}_file",
            None,
            f"Your {split} file (CSV, TSV or JSON Lines); default: {split}.csv / .tsv / .jsonl "
            "in --data_dir.",
        )
    flags.DEFINE_enum(
        "file_format", own("file_format"), ["auto", *FILE_FORMATS], "auto: from the name."
    )
    flags.DEFINE_string("encoding", own("encoding"), "The files' text encoding, e.g. cp1252.")
    flags.DEFINE_string(
        "text_a_column", None, "Column of the text: a header name or a position from 0."
    )
    flags.DEFINE_string("text_b_column", None, "Column of the second text of pairs, if any.")
    flags.DEFINE_string("label_column", None, "Column of the label(s).")
    flags.DEFINE_string(
        "label_columns", None, "Multi-label: comma-separated 0/1 columns, one per label."
    )
    flags.DEFINE_string(
        "label_delimiter", own("label_delimiter"), "Multi-label: separator in a label cell."
    )
    flags.DEFINE_enum(
        "problem_type",
        own("problem_type"),
        list(PROBLEM_TYPES),
        "single_label, multi_label (sigmoid per label) or regression; auto: multi_label for "
        "--label_columns or JSON lists, else single_label.",
    )
    flags.DEFINE_string("labels", None, "The labels in class-id order, comma-separated.")
    flags.DEFINE_string("label_file", None, "The labels in class-id order, one per line.")
    flags.DEFINE_string(
        "class_weights",
        None,
        "balanced (from the training labels) or one number per label: weights of each class's "
        "loss (multi-label: of each label's positive examples).",
    )
    flags.DEFINE_string(
        "decision_threshold",
        "global",
        "Multi-label: global (one threshold chosen on dev), per_label, or a probability.",
    )
    flags.DEFINE_integer(
        "min_label_positives",
        5,
        "per_label thresholds: a label with fewer positive dev examples keeps the global one.",
    )


def _given(flag_values, names):
    return [n for n in names if flag_values[n].present]


def classifier_processor(flag_values):
    """The `DataProcessor` the command line asks for (module docstring).

    Raises:
        ValueError: a combination that cannot work, naming the flags.
    """
    parse_decision_threshold(flag_values.decision_threshold)
    task = canonical_task_name(flag_values.task_name) if flag_values.task_name else None
    if flag_values.processor:
        from data.own_data.processor_file import load_processor

        ignored = _given(flag_values, FILE_FLAGS)
        if ignored:
            logging.warning(
                "--%s: not read with --processor, which reads its own files.", ", --".join(ignored)
            )
        return load_processor(flag_values.processor)
    if task is not None:
        ignored = _given(flag_values, FILE_FLAGS)
        if ignored:
            logging.warning(
                "--%s: not read for the GLUE task %s, whose files and labels are fixed; give "
                "your task another --task_name to read your own files.",
                ", --".join(ignored),
                flag_values.task_name,
            )
        if not flag_values.data_dir:
            raise ValueError(f"--task_name={flag_values.task_name} reads --data_dir: pass it.")
        options = {"language": flag_values.xnli_language} if task == "xnli" else {}
        return get_processor(task, **options)
    own_files = _given(flag_values, ("train_file", "dev_file", "test_file"))
    if not flag_values.data_dir and not own_files:
        raise ValueError(
            "Pass --task_name (a GLUE task, e.g. MRPC, with --data_dir), your own files "
            "(--train_file, --dev_file, --test_file, or --data_dir holding train.csv ...), or "
            "--processor=FILE.py:Class."
        )
    files = settings_from_flags(OwnDataFiles, flag_values)
    return FileProcessor(
        files,
        flag_values.task_name,
        earlier_run_folders(flag_values.output_dir, flag_values.init_checkpoint),
    )


def read_requested_sets(flag_values, processor, splits):
    """Reads (and so checks) the sets a run of a `FileProcessor` will use, before TensorFlow
    loads; they are kept for the run. Other processors read theirs in the run.

    Raises:
        ValueError: a bad file; for a --task_name that is no GLUE task given with no flag of
            the user's own files, the original's "Task not found" first (a typo is likelier).
    """
    if not isinstance(processor, FileProcessor):
        return
    try:
        for split in splits:
            getattr(processor, f"get_{split}_examples")()
    except ValueError as err:
        if flag_values.task_name and not _given(flag_values, FILE_FLAGS):
            raise ValueError(
                f"Task not found: {flag_values.task_name}. Known tasks: {sorted(PROCESSORS)}; "
                f"read as your own files (docs/own_data.md), --data_dir fails: {err}"
            ) from None
        raise
    if processor.is_multi_label and flag_values.long_inputs == "windows":
        raise ValueError(
            "--long_inputs=windows aggregates softmax classes; for a multi-label task use "
            "--long_inputs=head_tail or truncate."
        )
    processor.get_labels()
