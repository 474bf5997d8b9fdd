"""Runner settings from parsed flags, without importing TensorFlow (data tools use it too),
and the training loop's settings (`TrainConfig`).

A runner's settings object is a dataclass whose fields are flags of the same names; a default
lives in one place: the flag definition; for the loop's settings, `TrainConfig` (whose flags
read it with `default`); for the window and answer settings the fine-tuning runners share with
export_model.py, `TASK_DEFAULTS` (read with `task_default`).
"""

import dataclasses

# --precision: the Keras mixed-precision policies a run may use (`training.precision`).
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
# --strategy: the tf.distribute strategies a run may use (`training.strategy`).
STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")

# Per task (export_model.py's --task), the defaults of the settings a fine-tuning runner shares
# with the export of its model: the original's run_classifier.py and run_squad.py values, and
# run_ner's window stride.
TASK_DEFAULTS = {
    "classifier": {"max_seq_length": 128},
    "ner": {"max_seq_length": 128, "doc_stride": 64},
    "squad": {
        "max_seq_length": 384,
        "doc_stride": 128,
        "max_query_length": 64,
        "n_best_size": 20,
        "max_answer_length": 30,
    },
    "pretraining": {"max_seq_length": 128},
    "encoder": {"max_seq_length": 128},
}


def task_default(task, name):
    """The default of setting `name` (a flag name) for `task`, from `TASK_DEFAULTS`."""
    return TASK_DEFAULTS[task][name]


def settings_from_flags(settings_class, flag_values, **overrides):
    """Builds a settings dataclass from the flags of the same names.

    A field's value is `overrides[name]` if given, else the flag `--name`, else the field's
    default.

    Args:
        settings_class: a dataclass such as `TrainConfig` or `ClassifierRun`.
        flag_values: the parsed absl flag values of the runner.
        **overrides: values computed by the runner (e.g. a canonical task name).
    """
    values = {}
    for field in dataclasses.fields(settings_class):
        if field.name in overrides:
            values[field.name] = overrides[field.name]
        elif field.name in flag_values:
            values[field.name] = flag_values[field.name].value
    return settings_class(**values)


def default(settings_class, name):
    """The default of field `name` of the dataclass `settings_class`: the one home of a
    setting's default, which its flag definition reads."""
    return {f.name: f.default for f in dataclasses.fields(settings_class)}[name]


@dataclasses.dataclass
class TrainConfig:
    """Everything the loop needs besides the task and the data.

    Each field but the last five is the runner flag of the same name, and its default here is
    the flag's (`command_line.flags` reads it from this class), so a setting has one default;
    `settings_from_flags` fills a `TrainConfig` from the flags.

    Attributes:
        pad_to_whole_batches: None decides from the strategy (see
            `training.distributed_input.pad_to_whole_batches`).
        pad_to_max_seq_length: False cuts every batch to its longest sequence, rounded up to
            a length bucket (`data.records.batching`); True keeps the records' full length,
            as the original (a TPU always does).
        group_by_length: training batches of similar lengths (windows of 50 batches,
            `training.batch_plan`); only the fine-tuning runners define the flag.
        num_train_steps, num_warmup_steps: None for fine-tuning runs, which derive them from the
            number of examples and `--num_train_epochs` / `--warmup_proportion`.
        weight_decay_rate, clip_norm: the original optimizer's constants.
        run_flags: the command's flags as a flagfile (`fileio.flags_file.flagfile_text`), saved
            by the chief as `output_dir/flags.txt`; empty: nothing saved.
        init_seed, data_seed: the seeds of the new weights and dropout, and of the training
            data's order; None: `seed` (then the run is the original's `--seed` run).
        eval_every_steps: steps between dev evaluations during training (0: none; only the
            fine-tuning runners define the flag).
    """

    output_dir: str
    learning_rate: float = 5e-5
    train_batch_size: int = 32
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    log_every_steps: int = 100
    num_accumulation_steps: int = 1
    gradient_checkpointing: bool = False
    optimizer: str = "adamw"
    precision: str = "float32"
    use_xla: bool = False
    init_checkpoint: str | None = None
    keep_checkpoint_max: int = 5
    seed: int = 12345
    init_seed: int | None = None
    data_seed: int | None = None
    adam_bias_correction: bool = False
    eval_every_steps: int = 0
    pad_to_whole_batches: bool | None = None
    pad_to_max_seq_length: bool = False
    group_by_length: bool = False
    num_train_steps: int | None = None
    num_warmup_steps: int | None = None
    weight_decay_rate: float = 0.01
    clip_norm: float = 1.0
    run_flags: str = ""

    def __post_init__(self):
        # Each follows --seed unless given: every command line without them runs as before.
        for name in ("init_seed", "data_seed"):
            if getattr(self, name) is None:
                setattr(self, name, self.seed)

    def check(self, num_replicas):
        """ValueError naming the flag unless the settings fit `num_replicas` replicas."""
        if not isinstance(self.num_accumulation_steps, int):
            raise ValueError(
                f"--num_accumulation_steps={self.num_accumulation_steps} must be resolved to a "
                "number first (command_line.memory_flags.resolve_accumulation)."
            )
        per_update = num_replicas * self.num_accumulation_steps
        if self.train_batch_size % per_update:
            raise ValueError(
                f"--train_batch_size={self.train_batch_size} must be divisible by the number "
                f"of replicas ({num_replicas}) times --num_accumulation_steps "
                f"({self.num_accumulation_steps})."
            )
        for name in (
            "num_train_steps",
            "save_checkpoints_steps",
            "iterations_per_loop",
            "num_accumulation_steps",
            "log_every_steps",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be at least 1, got {value}.")
        if self.eval_every_steps < 0:
            raise ValueError(f"--eval_every_steps must be at least 0, got {self.eval_every_steps}.")
