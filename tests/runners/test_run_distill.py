"""run_distill.py end to end on tiny teachers: a classifier student of the teacher's own layers
(its starting weights, its stored teacher outputs, its run folder) exported by export_model.py
(float32 and int8) and converted by convert_checkpoint.py, a resume mid-run bit-equal to the run
that was not stopped, a narrower student that also learns the teacher's hidden states (its
projection saved and resumed, never exported; with two replicas, float16 and accumulation), NER
with unlabelled transfer text, SQuAD, and the refusals before TensorFlow loads."""

import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.glue_tasks import write_sst2
from tests.helpers.paths import TESTDATA
from tests.helpers.scripts import REPO, run_in_repo
from tests.helpers.squad_tasks import write_squad
from tests.helpers.tiny_config import write_tiny_config
from tests.helpers.tiny_exports import VOCAB

CONLL = os.path.join(TESTDATA, "conll2003")


def _script(name, *flags):
    result = run_in_repo([sys.executable, os.path.join(REPO, name), *map(str, flags)], timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _arrays(prefix, include_optimizer=False):
    from modeling import tf1_checkpoint

    return tf1_checkpoint.read_checkpoint(str(prefix), include_optimizer=include_optimizer)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("distill")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    write_tiny_config(root / "bert_config.json", vocab_size=len(VOCAB), num_hidden_layers=4)
    return root


def _common(root):
    return [
        f"--vocab_file={root / 'vocab.txt'}",
        f"--bert_config_file={root / 'bert_config.json'}",
        "--train_batch_size=8",
        "--learning_rate=2e-3",
        "--deterministic",
    ]


@pytest.fixture(scope="module")
def classifier_teacher(root):
    write_sst2(root / "sst2", num_train=64, num_dev=16, num_test=8)
    out = root / "sst2_teacher"
    _script(
        "run_classifier.py",
        "--task_name=SST-2",
        f"--data_dir={root / 'sst2'}",
        *_common(root),
        "--max_seq_length=24",
        "--num_train_epochs=2",
        "--do_train",
        "--do_eval",
        f"--output_dir={out}",
    )
    return out


def _distil_for_24_steps(teacher, out, *flags):
    """A classifier student of 24 steps (3 epochs of 64 examples), checkpoints every 8 kept."""
    return _script(
        "run_distill.py",
        f"--teacher_dir={teacher}",
        f"--output_dir={out}",
        "--num_train_epochs=3",
        "--save_checkpoints_steps=8",
        "--keep_checkpoint_max=10",
        *flags,
    )


def _distil_classifier(teacher, out):
    return _distil_for_24_steps(
        teacher,
        out,
        "--student_layers=1,3",
        "--do_predict",
        "--temperature=2",
        "--distill_alpha=0.7",
    )


def _stopped_after_step_8(run, copy):
    """A copy of `run`'s folder as the run would have left it, stopped after step 8."""
    shutil.copytree(run, copy)
    for path in copy.glob("model.ckpt-*"):
        if int(path.name.split("-")[1].split(".")[0]) > 8:
            path.unlink()
    (copy / "checkpoint").unlink()


def _export_classifier(root, run, name, *flags):
    """export_model.py of a classifier student's run folder into root/name, as of any run."""
    export = root / name
    _script(
        "export_model.py",
        "--task=classifier",
        f"--checkpoint={run}",
        f"--bert_config_file={run / 'bert_config.json'}",
        f"--vocab_file={root / 'vocab.txt'}",
        f"--export_dir={export}",
        *flags,
    )
    return export


@pytest.fixture(scope="module")
def classifier_student(root, classifier_teacher):
    out = root / "sst2_student"
    _distil_classifier(classifier_teacher, out)
    return out


@pytest.mark.slow
def test_classifier_student_is_a_run_of_run_classifier(
    root, classifier_teacher, classifier_student
):
    out = classifier_student
    # The student's first weights: the teacher's at layers 1 and 3, embeddings, pooler, head.
    teacher = _arrays(classifier_teacher)
    student = _arrays(out / "student_init" / "bert_model.ckpt")
    assert json.loads((out / "bert_config.json").read_text())["num_hidden_layers"] == 2
    for name, value in student.items():
        source = re.sub(r"layer_(\d+)/", lambda m: f"layer_{(1, 3)[int(m.group(1))]}/", name)
        np.testing.assert_array_equal(value, teacher[source], err_msg=name)
    assert len(student) == len(teacher) - 2 * 16
    # The teacher's outputs: one row per training record; every example has its gold label.
    from data.records.teacher_outputs import read_teacher_records

    logits, gold = read_teacher_records(str(out / "teacher_outputs.tf_record"), (2,))
    assert logits.shape == (64, 2) and gold.tolist() == [1] * 64
    assert np.isfinite(logits).all() and np.ptp(logits) > 0
    # A run of run_classifier.py: its flags.txt, labels, evaluation and prediction files.
    flags_txt = (out / "flags.txt").read_text()
    assert flags_txt.startswith("# run_classifier.py:")
    assert "--teacher_dir" not in flags_txt and "--temperature" not in flags_txt
    assert f"--bert_config_file={out / 'bert_config.json'}" in flags_txt
    for name in ("labels.txt", "problem.json", "eval_results.txt", "test_results.tsv"):
        assert (out / name).is_file(), name
    results = dict(
        line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines()
    )
    assert results["global_step"] == "24"  # int(64 / 8 * 3)
    # export_model.py takes it as any run: float32 and int8.
    for extra in ([], ["--quantize=int8"]):
        export = _export_classifier(root, out, f"export{len(extra)}", *extra)
        assert (export / ("model.tflite" if extra else "saved_model.pb")).is_file()
    # convert_checkpoint.py reads its config (2 layers), labels and casing from the run.
    hf = root / "student_hf"
    _script(
        "convert_checkpoint.py",
        f"--input_checkpoint={out}",
        "--output_format=hf",
        f"--output_dir={hf}",
    )
    config = json.loads((hf / "config.json").read_text())
    assert config["num_hidden_layers"] == 2
    assert config["id2label"] == {"0": "0", "1": "1"}


@pytest.mark.slow
def test_classifier_transfer_text_in_the_tasks_format(root, classifier_teacher):
    """--transfer_format=task: SST-2's test layout (`index<TAB>sentence`, a header) read as the
    task reads its test file; each of its rows is an example without a gold label."""
    out = root / "sst2_student_transfer"
    _script(
        "run_distill.py",
        f"--teacher_dir={classifier_teacher}",
        "--student_layers=0",
        f"--output_dir={out}",
        "--num_train_epochs=1",
        f"--transfer_file={root / 'sst2' / 'test.tsv'}",
        "--transfer_format=task",
    )
    from data.records.teacher_outputs import read_teacher_records

    logits, gold = read_teacher_records(str(out / "teacher_outputs.tf_record"), (2,))
    assert gold.tolist() == [1] * 64 + [0] * 8 and logits.shape == (72, 2)


@pytest.mark.slow
def test_multi_label_own_data_student(root):
    """A multi-label teacher of the user's own CSV files: its student is a run with the same
    labels and problem type, thresholds chosen on dev, predictions naming the labels; the test
    file, read in the task's own format, is its transfer text."""
    from tests.helpers.own_data_tasks import write_animals_csv

    sets = write_animals_csv(root / "animals", num_train=48, num_dev=16, num_test=8)
    teacher = root / "animals_teacher"
    own = ["--text_a_column=comment", "--label_column=tags", "--problem_type=multi_label"]
    _script(
        "run_classifier.py",
        f"--data_dir={root / 'animals'}",
        *own,
        *_common(root),
        "--max_seq_length=24",
        "--num_train_epochs=1",
        "--do_train",
        "--do_eval",
        f"--output_dir={teacher}",
    )
    out = root / "animals_student"
    _script(
        "run_distill.py",
        f"--teacher_dir={teacher}",
        "--student_layers=1,3",
        f"--output_dir={out}",
        "--do_predict",
        f"--transfer_file={root / 'animals' / 'test.csv'}",
        "--transfer_format=task",
    )
    from data.records.teacher_outputs import read_teacher_records

    labels = (teacher / "labels.txt").read_text()
    assert (out / "labels.txt").read_text() == labels == "bird\ncat\ndog\n"
    assert json.loads((out / "problem.json").read_text())["problem_type"] == "multi_label"
    assert (out / "thresholds.txt").is_file()
    header = (out / "test_predictions.tsv").read_text().splitlines()[0].split("\t")
    assert header[2:] == ["bird", "cat", "dog"]
    _, gold = read_teacher_records(str(out / "teacher_outputs.tf_record"), (3,))
    assert gold.tolist() == [1] * len(sets["train"]) + [0] * len(sets["test"])


@pytest.mark.slow
def test_a_sweep_of_students(root, classifier_teacher, tmp_path):
    """run_sweep.py over run_distill.py: each trial a student of the teacher's runner, ranked by
    the teacher's task's dev metric (SST-2: accuracy, read from each student's own files)."""
    from data.dev_metrics import read_eval_results

    sweep_dir = tmp_path / "sweep"
    _script(
        "run_sweep.py",
        f"--sweep_dir={sweep_dir}",
        "--grid=temperature=1,4",
        "--restarts=1",
        "--",
        "run_distill.py",
        f"--teacher_dir={classifier_teacher}",
        "--student_layers=0",
        "--num_train_epochs=1",
    )
    report = json.loads((sweep_dir / "sweep_results.json").read_text())
    assert [t["status"] for t in report["trials"]] == ["complete"] * 2
    scores = [read_eval_results(t["output_dir"])["eval_accuracy"] for t in report["trials"]]
    assert report["best"]["dev_metric"] == pytest.approx(max(scores), abs=1e-7)
    for trial in report["trials"]:
        flags_txt = (Path(trial["output_dir"]) / "flags.txt").read_text()
        assert flags_txt.startswith("# run_classifier.py:")


@pytest.mark.slow
def test_resume_mid_run_is_bit_equal(root, classifier_teacher, classifier_student):
    """The student's folder as a run stopped after step 8 left it, resumed: the same weights."""
    resumed = root / "sst2_resumed"
    _stopped_after_step_8(classifier_student, resumed)
    # The run wrote its absolute paths into its own files; the copy keeps the original's.
    result = _distil_classifier(classifier_teacher, resumed)
    assert "Teacher outputs read from" in result.stderr
    assert "model.ckpt-8 at step 8" in result.stderr
    final, uninterrupted = (
        _arrays(resumed / "model.ckpt-24"),
        _arrays(classifier_student / "model.ckpt-24"),
    )
    assert final.keys() == uninterrupted.keys()
    for name in final:
        np.testing.assert_array_equal(final[name], uninterrupted[name], err_msg=name)


def _distil_with_hidden_states(root, teacher, out, *extra):
    """A student half the teacher's width (new weights, 2 of its 4 layers' depth) that also
    learns its hidden states, through the projection."""
    small = root / "narrow_config.json"
    write_tiny_config(
        small, vocab_size=len(VOCAB), num_hidden_layers=2, hidden_size=16, intermediate_size=24
    )
    return _distil_for_24_steps(
        teacher,
        out,
        f"--student_config_file={small}",
        "--hidden_loss_weight=2",
        "--eval_every_steps=12",
        *extra,
    )


@pytest.fixture(scope="module")
def hidden_student(root, classifier_teacher):
    out = root / "sst2_hidden"
    _distil_with_hidden_states(root, classifier_teacher, out)
    return out


@pytest.mark.slow
def test_hidden_state_student_keeps_its_projection_out_of_its_weights(root, hidden_student):
    out = hidden_student
    settings = json.loads((out / "distillation.json").read_text())
    # The default map: embeddings, then student layers 0 and 1 to teacher layers 1 and 3.
    assert settings["hidden_pairs"] == [[0, 0], [1, 2], [2, 4]]
    assert "--hidden_loss_weight" not in (out / "flags.txt").read_text()
    # The training checkpoint holds the projection and its slots, as training state.
    state = _arrays(out / "model.ckpt-24", include_optimizer=True)
    projection = "_training_state/hidden_projection/kernel"
    assert state[projection].shape == (16, 32)
    assert {projection + "/adam_m", projection + "/adam_v"} <= state.keys()
    # The weights every reader takes are the student's alone: no projection, no teacher.
    weights = _arrays(out / "model.ckpt-24")
    assert not [n for n in weights if "projection" in n or "teacher" in n]
    assert weights["bert/encoder/layer_1/output/dense/kernel"].shape == (24, 16)
    best = _arrays(out / "best_checkpoint" / "bert_model.ckpt", include_optimizer=True)
    assert best.keys() == weights.keys()
    converted = root / "hidden_tf1"
    _script(
        "convert_checkpoint.py",
        f"--input_checkpoint={out}",
        "--output_format=tf1",
        f"--output_dir={converted}",
    )
    assert _arrays(converted / "bert_model.ckpt", include_optimizer=True).keys() == weights.keys()
    assert (_export_classifier(root, out, "hidden_export") / "saved_model.pb").is_file()


@pytest.mark.slow
def test_hidden_state_student_resumes_bit_equal(root, classifier_teacher, hidden_student):
    """Stopped after step 8 and resumed: the same weights, projection and slots at step 24."""
    resumed = root / "sst2_hidden_resumed"
    _stopped_after_step_8(hidden_student, resumed)
    (resumed / "eval_history.jsonl").unlink()
    shutil.rmtree(resumed / "best_checkpoint")
    result = _distil_with_hidden_states(root, classifier_teacher, resumed)
    assert "model.ckpt-8 at step 8" in result.stderr
    final = _arrays(resumed / "model.ckpt-24", include_optimizer=True)
    uninterrupted = _arrays(hidden_student / "model.ckpt-24", include_optimizer=True)
    assert final.keys() == uninterrupted.keys()
    assert "_training_state/hidden_projection/bias/adam_v" in final
    for name in final:
        np.testing.assert_array_equal(final[name], uninterrupted[name], err_msg=name)


@pytest.mark.slow
def test_a_narrower_student_trained_without_hidden_states_is_not_resumed_with_them(
    root, classifier_teacher
):
    out = root / "sst2_narrow_plain"
    small = root / "narrow_plain_config.json"
    write_tiny_config(small, vocab_size=len(VOCAB), hidden_size=16, intermediate_size=24)
    flags = [f"--teacher_dir={classifier_teacher}", f"--student_config_file={small}"]
    _script("run_distill.py", *flags, f"--output_dir={out}", "--num_train_epochs=0.5")
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_distill.py"),
            *flags,
            f"--output_dir={out}",
            "--hidden_loss_weight=1",
        ]
    )
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"--output_dir={out} holds a student trained without --hidden_loss_weight, whose "
            "checkpoints have no projection to the teacher's width to resume: resume it without "
            "--hidden_loss_weight, or pass a new --output_dir."
        )
    )
    assert "tensorflow" not in result.stderr.lower()


@pytest.mark.slow
def test_hidden_state_student_on_two_replicas_in_float16_with_accumulation(
    root, classifier_teacher
):
    """The teacher's encoder runs on each replica's micro-batches, cut to their own length,
    in the policy's dtype; the loss stays finite and the projection trains."""
    out = root / "sst2_hidden_mirrored"
    _distil_with_hidden_states(
        root,
        classifier_teacher,
        out,
        "--strategy=mirrored",
        "--num_cpu_devices=2",
        "--precision=mixed_float16",
        "--num_accumulation_steps=2",
        "--eval_every_steps=0",
    )
    state = _arrays(out / "model.ckpt-24", include_optimizer=True)
    assert np.isfinite(state["_training_state/hidden_projection/kernel"]).all()
    start = _arrays(out / "model.ckpt-8", include_optimizer=True)
    assert not np.array_equal(
        start["_training_state/hidden_projection/kernel"],
        state["_training_state/hidden_projection/kernel"],
    )


def _conll_slice(directory, sentences):
    directory.mkdir()
    for name, count in (("train", sentences), ("dev", 20)):
        with open(os.path.join(CONLL, f"{name}.txt")) as f:
            blocks = f.read().split("\n\n")[:count]
        (directory / f"{name}.txt").write_text("\n\n".join(blocks) + "\n")


@pytest.mark.slow
def test_ner_student_with_transfer_text(root):
    _conll_slice(root / "conll", 48)
    teacher = root / "ner_teacher"
    _script(
        "run_ner.py",
        f"--data_dir={root / 'conll'}",
        *_common(root),
        "--do_lower_case=true",
        "--max_seq_length=32",
        "--doc_stride=15",
        "--num_train_epochs=1",
        "--do_train",
        f"--output_dir={teacher}",
    )
    transfer = root / "transfer.txt"
    transfer.write_text("the man went to paris\n\nwho went to the river ?\n")
    out = root / "ner_student"
    _script(
        "run_distill.py",
        f"--teacher_dir={teacher}",
        "--student_layers=0,2",
        f"--transfer_file={transfer}",
        "--do_eval",
        f"--output_dir={out}",
    )
    from data.records.teacher_outputs import read_teacher_records

    labels = (teacher / "labels.txt").read_text().split()
    logits, gold = read_teacher_records(str(out / "teacher_outputs.tf_record"), (32, len(labels)))
    # The two transfer sentences have no gold tags; the training windows all have theirs.
    assert (gold == 0).sum() == 2 and (gold == 1).sum() == len(gold) - 2
    assert (out / "labels.txt").read_text() == (teacher / "labels.txt").read_text()
    assert (out / "eval_predictions.txt").is_file()
    assert "eval_f1" in (out / "eval_results.txt").read_text()


@pytest.mark.slow
def test_squad_student(root):
    write_squad(root / "train.json", 24, seed=0)
    write_squad(root / "dev.json", 6, seed=1)
    teacher = root / "squad_teacher"
    _script(
        "run_squad.py",
        *_common(root),
        f"--train_file={root / 'train.json'}",
        f"--predict_file={root / 'dev.json'}",
        "--max_seq_length=64",
        "--doc_stride=32",
        "--max_query_length=16",
        "--num_train_epochs=1",
        "--do_train",
        f"--output_dir={teacher}",
    )
    small = root / "small_config.json"
    write_tiny_config(small, vocab_size=len(VOCAB), num_hidden_layers=1)
    out = root / "squad_student"
    _script(
        "run_distill.py",
        f"--teacher_dir={teacher}",
        f"--student_config_file={small}",
        "--do_predict",
        f"--output_dir={out}",
    )
    assert json.loads((out / "predictions.json").read_text())
    assert (out / "flags.txt").read_text().startswith("# run_squad.py:")


@pytest.mark.parametrize(
    "extra,message",
    [
        ([], "run_distill.py needs --teacher_dir"),
        (["--teacher_dir=/nonexistent"], "holds no flags.txt of run_classifier.py"),
    ],
)
def test_refusals_name_the_flag(tmp_path, extra, message):
    result = run_in_repo([sys.executable, os.path.join(REPO, "run_distill.py"), *extra])
    assert result.returncode == 1
    assert message in result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra,message",
    [
        (["--output_dir={out}"], "Pass the student as --student_layers"),
        (["--output_dir={teacher}", "--student_layers=1"], "Pass --output_dir: the student's own"),
        (["--output_dir={out}", "--student_layers=3,1"], "--student_layers=3,1 is not a list"),
        (["--output_dir={out}", "--student_layers=1", "--temperature=0"], "--temperature=0.0"),
        (
            ["--output_dir={out}", "--student_layers=1,3", "--hidden_loss_weight=-1"],
            "--hidden_loss_weight=-1.0 must be 0 (off) or above",
        ),
        (
            ["--output_dir={out}", "--student_layers=1,3", "--hidden_layer_map=0:1"],
            "--hidden_layer_map=0:1 is read only with a hidden-state loss: pass "
            "--hidden_loss_weight above 0",
        ),
        (
            [
                "--output_dir={out}",
                "--student_layers=1,3",
                "--hidden_loss_weight=1",
                "--hidden_layer_map=0:1,1:4",
            ],
            "--hidden_layer_map=0:1,1:4 cannot be used: '4' is no teacher layer (0 to 3, or "
            "embeddings); pass student:teacher pairs of layers counted from 0, e.g. "
            "--hidden_layer_map=embeddings:embeddings,0:1,1:3 (the default).",
        ),
    ],
)
def test_refusals_with_a_teacher(classifier_teacher, tmp_path, extra, message):
    flags = [f.format(out=tmp_path / "out", teacher=classifier_teacher) for f in extra]
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "run_distill.py"),
            f"--teacher_dir={classifier_teacher}",
            *flags,
        ]
    )
    assert result.returncode == 1
    assert message in result.stderr.strip().splitlines()[-1]
    assert "tensorflow" not in result.stderr.lower()
