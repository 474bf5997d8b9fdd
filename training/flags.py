"""Flag groups shared by the runners. Only runners import this module (it defines absl flags)."""

from absl import flags

from training.loop import PRECISIONS
from training.strategy import STRATEGIES


def define_tpu_flags():
    """The original's TPU flags, accepted unchanged (`--use_tpu` selects the tpu strategy)."""
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU (same as --strategy=tpu).")
    flags.DEFINE_string("tpu_name", None, "Cloud TPU name or grpc://ip:8470 address.")
    flags.DEFINE_string(
        "tpu_zone", None, "GCE zone of the Cloud TPU (unused if tpu_name is an address)."
    )
    flags.DEFINE_string("gcp_project", None, "GCP project of the Cloud TPU.")
    flags.DEFINE_string("master", None, "TensorFlow master URL.")
    flags.DEFINE_integer("num_tpu_cores", 8, "TPU cores (informational; the TPU system decides).")
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save a checkpoint.")
    flags.DEFINE_integer(
        "iterations_per_loop", 1000, "Steps per compiled call (fewer host round trips)."
    )


def define_training_flags():
    """Flags this project adds: strategy, precision, XLA, optimizer, accumulation, logging."""
    flags.DEFINE_enum("strategy", "one_device", list(STRATEGIES), "tf.distribute strategy.")
    flags.DEFINE_integer("num_gpus", None, "GPUs for --strategy=mirrored (default: all).")
    flags.DEFINE_integer(
        "num_cpu_devices", 2, "Logical CPU devices for --strategy=mirrored without GPUs."
    )
    flags.DEFINE_enum("precision", "float32", list(PRECISIONS), "Compute precision.")
    flags.DEFINE_bool("use_xla", False, "Compile the forward/backward pass with XLA.")
    flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "adamw = the original optimizer.")
    flags.DEFINE_integer(
        "num_accumulation_steps", 1, "Micro-batches per update (train_batch_size stays global)."
    )
    flags.DEFINE_integer("log_every_steps", 100, "Steps between progress lines.")
    flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept in output_dir.")
    flags.DEFINE_integer("seed", 12345, "Seed of the input shuffling and initialisation.")
    flags.DEFINE_bool(
        "deterministic", False, "Deterministic ops: a resumed run then equals an uninterrupted one."
    )


def strategy_name(flag_values):
    """--use_tpu wins for compatibility with the original command lines."""
    return "tpu" if flag_values.use_tpu else flag_values.strategy
