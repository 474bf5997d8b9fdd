"""The memory flags of the training runners: `--num_accumulation_steps=auto`,
`--memory_budget_gb` and `--print_memory_plan` (the estimates: `training.memory_plan`).

Only runners import this module (through `command_line.flags`); TensorFlow-free until `auto` asks
for the device's memory.
"""

import os

from absl import flags, logging

from fileio.errors import UserError
from fileio.flags_file import recorded_flags
from modeling.config import BertConfig
from training import memory_plan

AUTO = "auto"
# Memory sizes --print_memory_plan covers when --memory_budget_gb is not given (GPUs users
# have: 16 GB V100/T4, 24 GB A10/L4/RTX, 40 GB and 80 GB A100/H100).
PLAN_SIZES_GB = (16, 24, 40, 80)


class StepsOrAuto(flags.IntegerParser):
    """An integer, or `auto` (any case): the parser of --num_accumulation_steps, so every
    integer command line parses as it did."""

    def parse(self, argument):
        if isinstance(argument, str) and argument.strip().lower() == AUTO:
            return AUTO
        return super().parse(argument)

    def flag_type(self):
        return "int or auto"


def define_memory_flags():
    """--memory_budget_gb and --print_memory_plan (--num_accumulation_steps: `command_line.flags`,
    with `StepsOrAuto`)."""
    flags.DEFINE_float(
        "memory_budget_gb",
        None,
        "Memory of one replica's device for --num_accumulation_steps=auto and "
        "--print_memory_plan (default: the GPU's memory less other processes' use, or the "
        "RAM available on a CPU; a TPU needs it given).",
    )
    flags.DEFINE_bool(
        "print_memory_plan",
        False,
        "Print the estimated peak memory of a training step for the model, --max_seq_length, "
        "--precision and --gradient_checkpointing, and the largest micro-batch for "
        "--memory_budget_gb (or 16, 24, 40 and 80 GB), then exit without training.",
    )


def _estimate(flag_values, device):
    config = BertConfig.from_json_file(flag_values.bert_config_file).validate()
    predictions = (
        flag_values.max_predictions_per_seq if "max_predictions_per_seq" in flag_values else 0
    )
    return memory_plan.estimate(
        config,
        flag_values.max_seq_length,
        flag_values.precision,
        flag_values.gradient_checkpointing,
        predictions,
        device=device,
    )


def _print_plan(flag_values):
    """Prints the plan of --print_memory_plan (no TensorFlow; GPU calibration)."""
    sizes = PLAN_SIZES_GB if flag_values.memory_budget_gb is None else (
        flag_values.memory_budget_gb,
    )  # fmt: skip
    print(
        f"{os.path.basename(flag_values.bert_config_file)}, --max_seq_length="
        f"{flag_values.max_seq_length}, --precision={flag_values.precision}, "
        f"--gradient_checkpointing={flag_values.gradient_checkpointing}, one replica:"
    )
    print(memory_plan.plan_text(_estimate(flag_values, "gpu"), sizes, flag_values.train_batch_size))


def resolve_accumulation(flag_values, strategy):
    """Replaces --num_accumulation_steps=auto by the number it means, so flags.txt records
    that number: the one a previous run in --output_dir recorded (a resume keeps its batch
    layout), else the fewest micro-batches per update whose estimated peak fits the memory of
    one replica's device (`memory_plan.plan_accumulation`). Logs the choice.

    Raises:
        UserError: a TPU without --memory_budget_gb, or not even one example that fits.
    """
    if flag_values.num_accumulation_steps != AUTO:
        return
    recorded = recorded_flags(flag_values.output_dir).get("num_accumulation_steps", AUTO)
    if recorded.isdigit() and int(recorded) >= 1:
        flag_values.num_accumulation_steps = int(recorded)
        logging.info(
            "--num_accumulation_steps=auto: %s, as %s/flags.txt records.",
            recorded,
            flag_values.output_dir,
        )
        return
    replicas = strategy.num_replicas_in_sync
    if flag_values.memory_budget_gb is not None:
        device = "gpu" if strategy.extended.worker_devices[0].find("GPU") >= 0 else "cpu"
        budget = flag_values.memory_budget_gb * memory_plan.GIB
    elif "TPU" in strategy.extended.worker_devices[0]:
        raise UserError(
            "--num_accumulation_steps=auto on a TPU needs --memory_budget_gb (the memory of "
            "one TPU core, e.g. 16 for a v3 core): pass it, or pass a number of steps."
        )
    else:
        device, budget = memory_plan.available_memory()
    try:
        steps, micro = memory_plan.plan_accumulation(
            _estimate(flag_values, device), budget, flag_values.train_batch_size, replicas
        )
    except ValueError as err:
        raise UserError(str(err)) from err
    logging.info(
        "--num_accumulation_steps=auto: %d micro-batches of %d examples per replica "
        "(%.1f GiB available on one %s).",
        steps,
        micro,
        budget / memory_plan.GIB,
        device.upper(),
    )
    flag_values.num_accumulation_steps = steps


def printed_memory_plan(flag_values):
    """With --print_memory_plan, prints the plan and returns
    True: the runner then ends, before TensorFlow loads."""
    if flag_values.print_memory_plan:
        _print_plan(flag_values)
    return flag_values.print_memory_plan
