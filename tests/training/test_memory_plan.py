"""--num_accumulation_steps=auto and the memory estimate (training/memory_plan.py,
command_line/memory_flags.py): the flag's values, the choice recorded for a resume, the estimate's
parameter count against the model, and a run whose budget forces accumulation staying within
it, its peak measured."""

import os
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from command_line.flag_rules import check_flags
from command_line.memory_flags import StepsOrAuto, resolve_accumulation
from fileio.errors import UserError, explain
from tests.helpers.pretraining_records import write_records
from tests.helpers.scripts import ENV, REPO
from tests.helpers.tiny_config import tiny_config, write_tiny_config
from training import memory_plan


def test_accumulation_flag_takes_integers_and_auto():
    parser = StepsOrAuto()
    assert parser.parse("4") == 4 and parser.parse(2) == 2
    assert parser.parse("auto") == "auto" and parser.parse(" AUTO ") == "auto"
    with pytest.raises(ValueError):
        parser.parse("four")
    check_flags({"num_accumulation_steps": "auto"})
    with pytest.raises(UserError, match="--num_accumulation_steps=0 must be at least 1"):
        check_flags({"num_accumulation_steps": 0})


def test_out_of_memory_names_the_flags_that_help():
    message = explain(tf.errors.ResourceExhaustedError(None, None, "OOM when allocating"))
    assert message.count(".") >= 1 and "OOM when allocating" in message
    for flag in (
        "--num_accumulation_steps",
        "--gradient_checkpointing",
        "--train_batch_size",
        "--max_seq_length",
    ):
        assert flag in message


def test_parameter_count_equals_the_models():
    from modeling.task_models import BertPretrainer

    config = tiny_config()
    model = BertPretrainer(config)
    counted = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    assert memory_plan.parameter_count(config, max_predictions_per_seq=5) == counted


def test_largest_micro_batch_is_the_largest_divisor_that_fits():
    guess = memory_plan.MemoryEstimate(10.0, 3.0, accumulation_bytes=2.0)
    for budget in np.arange(0.0, 120.0, 0.5):
        expected = max(
            [m for m in range(1, 33) if 32 % m == 0 and guess.peak(m, m < 32) <= budget],
            default=0,
        )
        assert memory_plan.largest_micro_batch(guess, budget, 32) == expected


def _flags(output_dir, steps, **values):
    base = dict(
        output_dir=str(output_dir),
        num_accumulation_steps=steps,
        memory_budget_gb=None,
        train_batch_size=32,
        max_seq_length=128,
        precision="float32",
        gradient_checkpointing=False,
    )
    return types.SimpleNamespace(**{**base, **values})


def test_auto_takes_the_number_a_previous_run_recorded(tmp_path):
    (tmp_path / "flags.txt").write_text("# run_pretraining.py\n--num_accumulation_steps=8\n")
    strategy = types.SimpleNamespace(num_replicas_in_sync=1)
    values = _flags(tmp_path, "auto")
    resolve_accumulation(values, strategy)
    assert values.num_accumulation_steps == 8
    given = _flags(tmp_path, 2)
    resolve_accumulation(given, strategy)
    assert given.num_accumulation_steps == 2


@pytest.mark.slow
def test_auto_under_a_small_budget_accumulates_and_its_measured_peak_fits(tmp_path):
    """run_pretraining with --memory_budget_gb well below what the whole batch needs: the
    micro-batch chosen keeps the process's measured peak (its own ru_maxrss, read by a parent
    that starts nothing else) within the budget."""
    sizes = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4)
    sizes.update(intermediate_size=1024, max_position_embeddings=128)
    write_tiny_config(tmp_path / "bert_config.json", **sizes)
    write_records(tmp_path / "data.tfrecord", num_examples=256, seq_length=128, max_predictions=8)
    budget_gb, batch = 3.0, 256
    command = [
        sys.executable,
        os.path.join(REPO, "run_pretraining.py"),
        f"--input_file={tmp_path / 'data.tfrecord'}",
        f"--output_dir={tmp_path / 'out'}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}",
        "--do_train",
        f"--train_batch_size={batch}",
        "--max_seq_length=128",
        "--max_predictions_per_seq=8",
        "--pad_to_max_seq_length",
        "--num_train_steps=1",
        "--num_warmup_steps=0",
        "--num_accumulation_steps=auto",
        f"--memory_budget_gb={budget_gb}",
    ]
    parent = (
        "import resource, subprocess, sys; "
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "sys.stderr.write(done.stderr); "
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", parent, *command],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, peak_kib = map(int, done.stdout.split())
    assert code == 0, done.stderr[-3000:]
    recorded = (tmp_path / "out" / "flags.txt").read_text()
    steps = int(recorded.split("--num_accumulation_steps=")[1].split()[0])
    assert f"--num_accumulation_steps=auto: {steps} micro-batches" in done.stderr
    # The budget forces accumulation: the whole batch would not fit by the estimate.
    config = tiny_config(**sizes)
    guess = memory_plan.estimate(config, 128, max_predictions_per_seq=8, device="cpu")
    assert guess.peak(batch) > budget_gb * memory_plan.GIB
    assert 1 < steps < batch
    assert peak_kib * 1024 <= budget_gb * memory_plan.GIB, (steps, peak_kib / 1024**2)


def test_print_memory_plan_lists_the_gpu_sizes_and_trains_nothing(tmp_path):
    write_tiny_config(tmp_path / "bert_config.json")
    command = [
        sys.executable,
        os.path.join(REPO, "run_pretraining.py"),
        "--input_file=unused",
        f"--output_dir={tmp_path / 'out'}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--gradient_checkpointing",
        "--print_memory_plan",
    ]
    done = subprocess.run(command, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line[:2].isdigit()]
    assert [row[0] for row in rows] == ["16", "24", "40", "80"]
    guess = memory_plan.estimate(
        tiny_config(), 64, gradient_checkpointing=True, max_predictions_per_seq=10
    )
    expected = int(
        (memory_plan.SAFETY * 16 * memory_plan.GIB - guess.fixed_bytes) // (guess.per_example_bytes)
    )
    assert int(rows[0][1]) == expected and rows[0][2] == "1"
    assert not (tmp_path / "out").exists()


def test_out_of_memory_in_a_training_step_is_one_sentence_with_the_micro_batch(data, tmp_path):
    from data.records import input_pipeline
    from tests.helpers.tiny_config import tiny_train_config
    from training.loop import Trainer
    from training.strategy import create_strategy
    from training.tasks import PretrainingTask

    config = tiny_train_config(tmp_path, train_batch_size=8, num_accumulation_steps=2)
    trainer = Trainer(PretrainingTask(tiny_config()), create_strategy("one_device"), config)

    def out_of_memory(iterator, num_steps):
        raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")

    trainer._train_steps = out_of_memory
    with pytest.raises(UserError) as raised:
        trainer.train(
            lambda skip, batching: input_pipeline.pretraining_dataset(
                [str(data / "data.tfrecord")], 32, 5, 8, True, batching=batching
            )
        )
    message = str(raised.value)
    assert "4 examples per micro-batch and replica at step 0" in message
    assert "--gradient_checkpointing" in message and "--num_accumulation_steps" in message
