"""run_distill.py's own flags, its teacher's run and its student, checked before TensorFlow loads.

The teacher is an --output_dir of run_classifier.py, run_ner.py or run_squad.py: its flags.txt
names the runner (its first line) and holds the task's flags, which run_distill.py reads as a
flagfile before its own command line (`teacher_runner`, `with_teacher_flags`). The student is
a config of its own (--student_config_file, with --student_checkpoint or new weights) or the
teacher's own layers (--student_layers); its bert_config.json is written into --output_dir,
where export_model.py and convert_checkpoint.py read it as any run's.
"""

import json
import os
import shutil

from absl import flags

from command_line import flag_rules
from fileio import reading
from fileio.atomic import write_atomically
from fileio.errors import UserError
from fileio.flags_file import recorded_command
from modeling.config import BertConfig
from modeling.student_layers import parse_layer_map, parse_layers, student_config_dict

RUNNERS = ("run_classifier.py", "run_ner.py", "run_squad.py")
DISTILL_FLAGS = (
    "teacher_dir",
    "student_config_file",
    "student_checkpoint",
    "student_layers",
    "temperature",
    "distill_alpha",
    "transfer_file",
    "transfer_format",
    "hidden_loss_weight",
    "hidden_layer_map",
)
SETTINGS_FILE = "distillation.json"


def define_distill_flags():
    """Defines run_distill.py's own flags (the task's come from the teacher's runner)."""
    flags.DEFINE_string(
        "teacher_dir",
        None,
        "The teacher: an --output_dir of run_classifier.py, run_ner.py or run_squad.py (its "
        "flags.txt, labels and latest checkpoint).",
    )
    flags.DEFINE_string(
        "student_config_file",
        None,
        "The student's bert_config.json (the teacher's vocabulary; any smaller size).",
    )
    flags.DEFINE_string(
        "student_checkpoint",
        None,
        "With --student_config_file: the student's first weights, a Google-layout checkpoint "
        "(default: new weights).",
    )
    flags.DEFINE_string(
        "student_layers",
        None,
        "The student as some of the teacher's own layers, counted from 0, e.g. 1,3,5 (its "
        "embeddings, pooler and head come along).",
    )
    flags.DEFINE_float(
        "temperature", 2.0, "T: both models' logits are divided by it before the softmax."
    )
    flags.DEFINE_float(
        "distill_alpha",
        0.5,
        "The soft targets' weight where an example has a gold label (the gold label's: 1 - "
        "it); examples without one learn from the teacher alone.",
    )
    flags.DEFINE_multi_string(
        "transfer_file",
        [],
        "Unlabelled text the student also learns from (the teacher labels it); repeatable.",
    )
    flags.DEFINE_enum(
        "transfer_format",
        "lines",
        ["lines", "task"],
        "--transfer_file: one example per line (a tab between a pair's texts; a sentence's "
        "words split at spaces for NER), or the task's own format (a classifier's: its test "
        "file's layout, e.g. SST-2's `index<TAB>sentence` or your own files' columns, a label "
        "column optional and ignored; NER: CoNLL, tags ignored).",
    )
    flags.DEFINE_float(
        "hidden_loss_weight",
        0.0,
        "Above 0: the student also learns the teacher's hidden states (mean squared error at the "
        "real tokens, through a learned projection where the widths differ), this loss's "
        "weight; the teacher's encoder then runs in every training step. 0: off.",
    )
    flags.DEFINE_string(
        "hidden_layer_map",
        None,
        "With --hidden_loss_weight: which student hidden state learns which teacher's, as "
        "student:teacher pairs of layers counted from 0 or embeddings:embeddings, e.g. "
        "embeddings:embeddings,0:1,1:3 (default: the embeddings, and student layer i to teacher "
        "layer round((i+1)*T/S)-1 of T and S layers).",
    )


def _option_value(argv, name):
    """The value of `--name=value` or `--name value` in `argv`, or None."""
    for index, arg in enumerate(argv):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and index + 1 < len(argv):
            return argv[index + 1]
    return None


def teacher_runner(argv):
    """(the --teacher_dir of `argv`, the runner its flags.txt names) or Nones where absent; the
    runner decides which flags run_distill.py defines, so it is read before the flags are."""
    teacher_dir = _option_value(argv, "teacher_dir")
    if not teacher_dir:
        return None, None
    runner, _ = recorded_command(teacher_dir)
    return teacher_dir, runner if runner in RUNNERS else None


def with_teacher_flags(argv, teacher_dir):
    """`argv` with the teacher's flags.txt as a flagfile before its own flags (which win)."""
    return [argv[0], f"--flagfile={os.path.join(teacher_dir, 'flags.txt')}", *argv[1:]]


def without_runner_flags(argv, teacher_dir):
    """`argv` cut to --teacher_dir and --help (there is no runner whose flags the rest are)."""
    kept = [arg for arg in argv[1:] if arg.startswith("--help")]
    return [argv[0], *([f"--teacher_dir={teacher_dir}"] if teacher_dir else []), *kept]


def check_teacher(teacher_dir, runner):
    """Refuses a --teacher_dir that is no fine-tuning run with a checkpoint."""
    if not teacher_dir:
        raise UserError(
            "run_distill.py needs --teacher_dir: the --output_dir of a run_classifier.py, "
            "run_ner.py or run_squad.py run."
        )
    if runner is None:
        raise UserError(
            f"--teacher_dir={teacher_dir} holds no flags.txt of run_classifier.py, run_ner.py "
            "or run_squad.py: pass the --output_dir of such a training run."
        )
    if not reading.is_file(os.path.join(teacher_dir, "checkpoint")):
        raise UserError(
            f"--teacher_dir={teacher_dir} holds no checkpoint: train the teacher there first "
            f"({runner} --do_train)."
        )


def prepare_student(flag_values, runner):
    """Checks the distillation flags, writes the student's bert_config.json into --output_dir
    and points --bert_config_file and --init_checkpoint at the student's (the runner's checks
    then check the student, and its flags.txt records the student).

    Returns:
        dict: `teacher_config` (a `BertConfig`), `student_layers` (a tuple or None) and the
        `DistillSettings` values, `temperature`, `alpha`, `hidden_weight` and `hidden_pairs`.
    """
    fv = flag_values
    teacher_dir = fv.teacher_dir
    if not fv.output_dir or _same_folder(fv.output_dir, teacher_dir):
        raise UserError(
            "Pass --output_dir: the student's own folder, not the teacher's "
            f"(--teacher_dir={teacher_dir})."
        )
    # Before the student's config is written (the runner's check_flags comes after).
    flag_rules.check_values(fv, ("temperature", "distill_alpha", "hidden_loss_weight"))
    if fv.hidden_layer_map and not fv.hidden_loss_weight:
        raise UserError(
            f"--hidden_layer_map={fv.hidden_layer_map} is read only with a hidden-state loss: "
            "pass --hidden_loss_weight above 0 (e.g. 1) too, or leave --hidden_layer_map out."
        )
    if fv.transfer_file and runner == "run_squad.py":
        raise UserError(
            "--transfer_file is for run_classifier.py and run_ner.py teachers: SQuAD students "
            "learn from the training file's questions."
        )
    for path in fv.transfer_file:
        if not reading.is_file(path):
            raise UserError(f"--transfer_file={path} does not exist: pass a text file.")
    teacher_config = BertConfig.from_json_file(fv.bert_config_file).validate()
    if bool(fv.student_layers) == bool(fv.student_config_file):
        raise UserError(
            "Pass the student as --student_layers (some of the teacher's layers, e.g. 1,3,5) or "
            "as --student_config_file (with --student_checkpoint), one of the two."
        )
    os.makedirs(fv.output_dir, exist_ok=True)
    config_path = os.path.join(fv.output_dir, "bert_config.json")
    layers = None
    if fv.student_layers:
        if fv.student_checkpoint:
            raise UserError(
                "--student_checkpoint goes with --student_config_file: --student_layers takes "
                "the teacher's own weights."
            )
        layers = parse_layers(fv.student_layers, teacher_config.num_hidden_layers)
        config = student_config_dict(teacher_config.to_dict(), layers)
        write_atomically(config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")
        fv.init_checkpoint = None
    else:
        student = BertConfig.from_json_file(fv.student_config_file).validate()
        if student.vocab_size != teacher_config.vocab_size:
            raise UserError(
                f"--student_config_file={fv.student_config_file} has vocab_size "
                f"{student.vocab_size}, the teacher {teacher_config.vocab_size}: the student "
                "reads the teacher's vocabulary; pass a config of the same vocab_size."
            )
        if not _same_file(fv.student_config_file, config_path):
            shutil.copyfile(fv.student_config_file, config_path)
        fv.init_checkpoint = fv.student_checkpoint
    pairs = ()
    if fv.hidden_loss_weight > 0:
        student = BertConfig.from_json_file(config_path)
        pairs = parse_layer_map(
            fv.hidden_layer_map, student.num_hidden_layers, teacher_config.num_hidden_layers
        )
        if student.hidden_size != teacher_config.hidden_size:
            _check_projection_resumable(fv.output_dir)
    fv.bert_config_file = config_path
    fv.do_train = True
    settings = {
        "teacher_dir": teacher_dir,
        "runner": runner,
        "student_layers": list(layers) if layers else None,
        "temperature": fv.temperature,
        "alpha": fv.distill_alpha,
        "transfer_file": list(fv.transfer_file),
        "transfer_format": fv.transfer_format,
    }
    if pairs:
        settings["hidden_loss_weight"] = fv.hidden_loss_weight
        settings["hidden_pairs"] = [list(pair) for pair in pairs]
    write_atomically(
        os.path.join(fv.output_dir, SETTINGS_FILE), json.dumps(settings, indent=2) + "\n"
    )
    return {
        "teacher_config": teacher_config,
        "student_layers": layers,
        "temperature": fv.temperature,
        "alpha": fv.distill_alpha,
        "hidden_weight": fv.hidden_loss_weight,
        "hidden_pairs": pairs,
    }


def _check_projection_resumable(output_dir):
    """Refuses to resume, with the hidden-state loss's projection, a run trained without it
    (its checkpoints have no projection to restore)."""
    path = os.path.join(output_dir, SETTINGS_FILE)
    if not (reading.is_file(os.path.join(output_dir, "checkpoint")) and reading.is_file(path)):
        return
    with reading.open_for_reading(path) as f:
        if json.load(f).get("hidden_pairs"):
            return
    raise UserError(
        f"--output_dir={output_dir} holds a student trained without --hidden_loss_weight, "
        "whose checkpoints have no projection to the teacher's width to resume: resume it "
        "without --hidden_loss_weight, or pass a new --output_dir."
    )


def _same_folder(a, b):
    return os.path.realpath(a.rstrip("/")) == os.path.realpath(b.rstrip("/"))


def _same_file(a, b):
    return os.path.exists(b) and os.path.realpath(a) == os.path.realpath(b)
