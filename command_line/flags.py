"""Flag groups shared by the runners and how a runner starts. Only runners import this module
(it defines absl flags).

TensorFlow-free until a runner asks for its strategy: a runner checks its command line, its
config and its vocabulary first (`check_fine_tuning`), and a command line that cannot work ends
in a second instead of after TensorFlow's start (5-10 s).
"""

import sys

from absl import flags, logging

from command_line import memory_flags
from command_line.flag_rules import check_flags, default_stride
from command_line.tensorflow_logs import log_at_info
from data.tokenization.full_tokenizer import FullTokenizer, validate_case_matches_checkpoint
from fileio.errors import UserError
from fileio.flags_file import flagfile_text
from modeling.config import BertConfig
from training.settings import PRECISIONS, STRATEGIES, TrainConfig, default, settings_from_flags


def _train(name):
    """The default of the loop's setting `name` (its home: `TrainConfig`)."""
    return default(TrainConfig, name)


def define_model_flags(with_vocab=True, lower_case=True):
    """The model a runner starts from: its config, checkpoint and (for text input) vocabulary.

    Args:
        with_vocab: define --vocab_file and --do_lower_case.
        lower_case: the default of --do_lower_case (NER preserves case by default).
    """
    flags.DEFINE_string("bert_config_file", None, "bert_config.json of the model.")
    flags.DEFINE_string(
        "init_checkpoint",
        _train("init_checkpoint"),
        "Initial checkpoint (usually a pre-trained BERT).",
    )
    if with_vocab:
        flags.DEFINE_string("vocab_file", None, "vocab.txt of the pre-trained model.")
        flags.DEFINE_bool(
            "do_lower_case", lower_case, "True for uncased models, False for cased ones."
        )


def define_long_input_flags(with_stride=True):
    """How run_classifier (and the export of its model) reads inputs longer than the window:
    `data.glue.long_inputs`."""
    from data.glue.long_inputs import LONG_INPUTS, WINDOW_AGGREGATIONS

    flags.DEFINE_enum(
        "long_inputs",
        "truncate",
        LONG_INPUTS,
        "Inputs longer than --max_seq_length: truncate (the original), head_tail (the first "
        "--head_tokens pieces and the last ones) or windows (--doc_stride apart, aggregated).",
    )
    flags.DEFINE_integer(
        "head_tokens",
        None,
        "--long_inputs=head_tail: pieces kept from the head (default: a quarter of those kept).",
    )
    if with_stride:
        flags.DEFINE_integer(
            "doc_stride", None, "--long_inputs=windows: pieces between window starts (default: "
            "half the window).",
        )  # fmt: skip
    flags.DEFINE_enum(
        "window_aggregation",
        "mean",
        WINDOW_AGGREGATIONS,
        "--long_inputs=windows: an example's prediction from its windows' (mean probability, "
        "per-class max, softmax of the mean logits, or a vote).",
    )


def warn_unused_long_input_flags(flag_values):
    """Warns about --head_tokens / --window_aggregation given for another --long_inputs."""
    mode = flag_values.long_inputs
    for name, applies_to in (("head_tokens", "head_tail"), ("window_aggregation", "windows")):
        if mode != applies_to:
            warn_if_given(flag_values, (name,), f"it applies to {applies_to}, not {mode}")


def define_precision_flag():
    """--precision: the Keras policy of every step, training and inference alike."""
    flags.DEFINE_enum(
        "precision",
        _train("precision"),
        list(PRECISIONS),
        "Compute precision (variables and checkpoints stay float32). mixed_bfloat16 speeds up "
        "inference on CPUs with AVX512-BF16 or AMX and on GPUs from Ampere on; mixed_float16 "
        "on NVIDIA GPUs from Volta on.",
    )


def define_run_flags(fine_tuning, head_dropout=False, length_grouping=False):
    """The original's flags of a training run; fine-tuning adds epochs, warmup and prediction.

    Args:
        fine_tuning: define the fine-tuning flags.
        head_dropout: define --classifier_dropout_prob (runners whose head has dropout).
        length_grouping: define --group_by_length (runners whose batches are cut to length).
    """
    flags.DEFINE_string("output_dir", None, "Checkpoints, TFRecords, summaries and results.")
    flags.DEFINE_bool("do_train", False, "Whether to run training.")
    flags.DEFINE_integer(
        "train_batch_size", _train("train_batch_size"), "Total batch size for training."
    )
    flags.DEFINE_float(
        "learning_rate", _train("learning_rate"), "The initial learning rate for Adam."
    )
    if fine_tuning:
        flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
        flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
        flags.DEFINE_float("warmup_proportion", 0.1, "Proportion of training with linear warmup.")
        flags.DEFINE_bool(
            "dry_run",
            False,
            "Check the command line, the config, the vocabulary and every input file the run "
            "would read, then exit without loading TensorFlow or writing anything.",
        )
        flags.DEFINE_integer(
            "eval_every_steps",
            _train("eval_every_steps"),
            "With --do_train and --do_eval: evaluate on dev every N steps too, logged in "
            "eval_history.jsonl, the best so far kept in best_checkpoint/ (0: only at the end).",
        )
    if length_grouping:
        flags.DEFINE_bool(
            "group_by_length",
            _train("group_by_length"),
            "Training batches of similar lengths: the shuffled examples sorted by length "
            "within windows of 50 batches, the batches of a window in a seeded random order. "
            "Far less padding to compute, but other examples share a batch than in the "
            "original, so results differ from its within the usual run-to-run spread.",
        )
    if head_dropout:
        flags.DEFINE_float(
            "classifier_dropout_prob",
            0.1,
            "Dropout before the output layer while training (the original's fixed 0.1).",
        )


def define_tpu_flags():
    """The original's TPU flags, accepted unchanged (`--use_tpu` selects the tpu strategy)."""
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU (same as --strategy=tpu).")
    flags.DEFINE_string("tpu_name", None, "Cloud TPU name or grpc://ip:8470 address.")
    flags.DEFINE_string(
        "tpu_zone", None, "GCE zone of the Cloud TPU (unused if tpu_name is an address)."
    )
    flags.DEFINE_string("gcp_project", None, "GCP project of the Cloud TPU.")
    flags.DEFINE_string("master", None, "TensorFlow master URL.")
    flags.DEFINE_string("tpu_job_name", None, "The TPU worker job's name (the original's; unused).")
    flags.DEFINE_integer(
        "num_tpu_cores", 8, "TPU cores; when given, checked against the TPU's own count."
    )


def define_training_flags():
    """The loop's flags: checkpoints and compiled calls (the original's names), then those this
    project adds: strategy, precision, XLA, optimizer, accumulation, logging."""
    flags.DEFINE_integer(
        "save_checkpoints_steps",
        _train("save_checkpoints_steps"),
        "How often to save a checkpoint.",
    )
    flags.DEFINE_integer(
        "iterations_per_loop",
        _train("iterations_per_loop"),
        "Steps per compiled call (fewer host round trips); a call also ends at every "
        "--log_every_steps and --save_checkpoints_steps boundary, so raise those as well for "
        "longer calls.",
    )
    flags.DEFINE_enum("strategy", "one_device", list(STRATEGIES), "tf.distribute strategy.")
    flags.DEFINE_integer(
        "num_gpus",
        None,
        "Train on this many local GPUs: selects --strategy=mirrored over the first N "
        "(--strategy=mirrored alone uses all of them).",
    )
    flags.DEFINE_integer(
        "num_cpu_devices",
        None,
        "Testing aid: where TensorFlow sees no GPU, run --strategy=mirrored on this many "
        "logical CPU devices (without it, mirrored fails there and says how to install GPU "
        "support).",
    )
    define_precision_flag()
    flags.DEFINE_bool("use_xla", _train("use_xla"), "Compile the forward/backward pass with XLA.")
    flags.DEFINE_enum(
        "optimizer", _train("optimizer"), ["adamw", "lamb"], "adamw = the original optimizer."
    )
    flags.DEFINE(
        memory_flags.StepsOrAuto(),
        "num_accumulation_steps",
        _train("num_accumulation_steps"),
        "Micro-batches per update (train_batch_size stays global), or auto: the fewest whose "
        "estimated memory fits the device (training/memory_plan.py; the number chosen is "
        "logged and saved in flags.txt, which a resume reads). Batches cut to length without "
        "XLA take them in order of length, each at its own longest sequence.",
        serializer=flags.ArgumentSerializer(),
    )
    flags.DEFINE_bool(
        "gradient_checkpointing",
        _train("gradient_checkpointing"),
        "Keep only each encoder layer's input in the forward pass and recompute the layer in "
        "the backward pass (same dropout masks): the same loss and gradients in far less "
        "memory, for about a third more compute.",
    )
    memory_flags.define_memory_flags()
    flags.DEFINE_integer(
        "log_every_steps", _train("log_every_steps"), "Steps between progress lines."
    )
    flags.DEFINE_integer(
        "keep_checkpoint_max", _train("keep_checkpoint_max"), "Checkpoints kept in output_dir."
    )
    flags.DEFINE_integer("seed", _train("seed"), "Seed of the input shuffling and initialisation.")
    flags.DEFINE_integer("init_seed", None, "Seed of new weights and dropout (default: --seed).")
    flags.DEFINE_integer("data_seed", None, "Seed of the training data order (default: --seed).")
    flags.DEFINE_bool(
        "adam_bias_correction", _train("adam_bias_correction"), "Adam's bias correction (adamw)."
    )
    flags.DEFINE_bool(
        "deterministic", False, "Deterministic ops: a resumed run then equals an uninterrupted one."
    )
    flags.DEFINE_float(
        "multi_worker_timeout",
        300.0,
        "Seconds a worker of --strategy=multi_worker_mirrored waits for the others in TF_CONFIG.",
    )
    flags.DEFINE_float(
        "collective_timeout",
        None,
        "Seconds a worker of --strategy=multi_worker_mirrored waits in one collective step for "
        "the others before stopping (default: no limit). A worker that dies, stops or loses "
        "its host stops the others without it, within TensorFlow's heartbeat timeout (about "
        "10 s); this limit also stops a worker stuck in its own work. Keep it above the "
        "longest checkpoint save and evaluation.",
    )
    flags.DEFINE_bool(
        "pad_to_max_seq_length",
        _train("pad_to_max_seq_length"),
        "Run every batch at --max_seq_length, as the original. By default each batch is cut "
        "to its longest real sequence (rounded up to a multiple of 8, or of max_seq_length/8 "
        "with --use_xla), which changes no result beyond float rounding; a TPU always runs "
        "the full length.",
    )
    flags.DEFINE_bool(
        "pad_to_whole_batches",
        _train("pad_to_whole_batches"),
        "Pad the last evaluation/prediction batch to a whole batch (padding examples count for "
        "nothing), so every batch has one static shape. Default: on for TPUs and several "
        "workers, off otherwise.",
    )


def warn_if_given(flag_values, names, why):
    """Logs a warning for each of `names` given on the command line: flags a runner accepts so
    that the original's command lines still parse, but does not use.

    Returns:
        The names given.
    """
    given = [name for name in names if flag_values[name].present]
    for name in given:
        logging.warning("--%s=%s is ignored: %s.", name, flag_values[name].value, why)
    return given


def strategy_name(flag_values):
    """--use_tpu wins for compatibility with the original command lines; --num_gpus selects
    the mirrored strategy (it means GPUs of this host).

    Raises:
        UserError: --num_gpus with a TPU or a multi-worker strategy.
    """
    name = "tpu" if flag_values.use_tpu else flag_values.strategy
    if flag_values.num_gpus is None:
        return name
    if name in ("tpu", "multi_worker_mirrored"):
        chosen = "--use_tpu" if flag_values.use_tpu else f"--strategy={name}"
        raise UserError(
            f"--num_gpus={flag_values.num_gpus} selects --strategy=mirrored (the GPUs of this "
            f"host) and cannot be combined with {chosen}: leave one of them out."
        )
    return "mirrored"


def strategy_from_flags(flag_values):
    """Creates the strategy; call it before any other TensorFlow work of the process, because
    logical CPU devices (mirrored without GPUs) can only be configured first.

    The TPU is `--tpu_name` in `--tpu_zone` of `--gcp_project`, or the `--master` address, as
    in the original; `--num_tpu_cores` is checked against it when given on the command line.
    """
    from training.strategy import create_strategy

    warn_if_given(flag_values, ("tpu_job_name",), "the TPU strategy finds its worker job itself")
    return create_strategy(
        strategy_name(flag_values),
        num_gpus=flag_values.num_gpus,
        num_cpu_devices=flag_values.num_cpu_devices,
        tpu_address=flag_values.tpu_name or flag_values.master,
        tpu_zone=flag_values.tpu_zone,
        gcp_project=flag_values.gcp_project,
        num_tpu_cores=flag_values.num_tpu_cores if flag_values["num_tpu_cores"].present else None,
        multi_worker_timeout=flag_values.multi_worker_timeout,
        collective_timeout=flag_values.collective_timeout,
    )


def seed_from_flags(flag_values):
    """Seeds Keras, Python, NumPy (new weights, dropout) with --init_seed, TensorFlow (tf.data's
    shuffles) with --data_seed, each --seed unless given; --deterministic: deterministic ops."""
    import keras
    import tensorflow as tf

    config = settings_from_flags(TrainConfig, flag_values, output_dir="")
    keras.utils.set_random_seed(config.init_seed)
    tf.random.set_seed(config.data_seed)
    if flag_values.deterministic:
        tf.config.experimental.enable_op_determinism()


def train_config_from_flags(flag_values, strategy, **overrides):
    """A `TrainConfig` from the shared flags; runner-specific values come as overrides.
    `--num_accumulation_steps=auto` becomes a number for `strategy` first (flags.txt records
    it: `memory_flags.resolve_accumulation`)."""
    memory_flags.resolve_accumulation(flag_values, strategy)
    overrides.setdefault("run_flags", flagfile_text(flag_values))
    return settings_from_flags(TrainConfig, flag_values, **overrides)


def resolve_default_stride(flag_values, window):
    """Sets --doc_stride, when the command line does not give it, to the runner's default if
    that leaves consecutive windows some shared context in a `window`-piece window, else to
    half the window (logged), so that a project default never makes a legal
    --max_seq_length warn. The value set is the one flags.txt records.
    """
    if not flag_values["doc_stride"].present:
        flag_values.doc_stride = default_stride(flag_values.doc_stride, window)


def check_fine_tuning(flag_values):
    """The start of run_classifier / run_ner before TensorFlow loads: the original's checks, in
    its order and with its messages, then the model config and the tokenizer.

    Returns:
        (bert_config, tokenizer).

    Raises:
        ValueError: a size or setting that cannot work (`command_line.flag_rules`), a cased/uncased
            mismatch with a known Google checkpoint, none of --do_train/--do_eval/--do_predict,
            or --max_seq_length beyond the model's positions.
    """
    log_at_info(flag_values)
    check_flags(flag_values)
    validate_case_matches_checkpoint(flag_values.do_lower_case, flag_values.init_checkpoint)
    if not (flag_values.do_train or flag_values.do_eval or flag_values.do_predict):
        raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    bert_config = BertConfig.from_json_file(flag_values.bert_config_file).validate()
    bert_config.check_max_seq_length(flag_values.max_seq_length)
    tokenizer = FullTokenizer(flag_values.vocab_file, flag_values.do_lower_case)
    return bert_config, tokenizer


def exit_if_dry_run(flag_values):
    """Ends a `--dry_run` run once its checks passed (status 0, nothing written)."""
    if flag_values.dry_run:
        logging.info("--dry_run: the command line and the files it reads are in order.")
        sys.exit(0)


def start_tensorflow(flag_values):
    """Creates the strategy (the first TensorFlow work of the process) and seeds the run.

    Returns:
        The `tf.distribute.Strategy`.
    """
    strategy = strategy_from_flags(flag_values)
    seed_from_flags(flag_values)
    return strategy
