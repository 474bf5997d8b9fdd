"""benchmarks/accelerator_check.sh: the dry run on the CPU produces every row and passes its
checks, so the check is ready when a GPU machine is; the GPU matrix's order and budget."""

import json
import time

import pytest

from benchmarks import accelerator_check
from tests.helpers.scripts import PEER_ENV, run_in_repo

CHECKS = {
    "mirrored_vs_one_device",
    "xla_vs_no_xla",
    "mixed_float16_tracks_float32",
    "mixed_bfloat16_tracks_float32",
}


@pytest.mark.slow
def test_dry_run_measures_every_row_and_passes_the_checks(tmp_path):
    out = tmp_path / "check.json"
    done = run_in_repo(
        ["bash", "benchmarks/accelerator_check.sh", "--dry_run", "--out", str(out)],
        timeout=900,
        env=PEER_ENV,  # Model Garden, the peer, needs SciPy
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["meta"]["dry_run"] and result["meta"]["device"] == "CPU"

    checks = {c["name"]: c for c in result["checks"]}
    assert set(checks) == CHECKS
    assert all(c["passed"] for c in checks.values()), checks
    for name in CHECKS:
        assert f"PASS {name}" in done.stdout

    # The dry run's reduced matrix: each peer with every precision, both XLA settings and
    # both phases.
    rows = result["rows"]
    expected = {
        (peer, phase, precision, xla)
        for peer in accelerator_check.PEERS
        for phase, precision, xla in accelerator_check.DRY_RUN_ROWS
    }
    # Then the memory rows: ours with --num_accumulation_steps=auto, without and with
    # gradient checkpointing, at the global batch of 32.
    memory = [r for r in rows if r["peer"].startswith("ours_auto")]
    rows = [r for r in rows if not r["peer"].startswith("ours_auto")]
    assert [r["peer"] for r in memory] == ["ours_auto", "ours_auto_ckpt"]
    for row in memory:
        assert row["status"] == "ok" and row["batch"] == 32 and row["phase"] == 2, row
        assert row["accumulation"] >= 1 and row["seq_per_s_per_gpu"] > 0, row
        assert row["gradient_checkpointing"] == (row["peer"] == "ours_auto_ckpt")
        assert f"auto: {row['accumulation']} micro-batches" in done.stdout
    assert {(r["peer"], r["phase"], r["precision"], r["xla"]) for r in rows} == expected
    assert len(rows) == len(expected) == 6
    assert {r["precision"] for r in rows} == set(accelerator_check.PRECISIONS)
    for row in rows:
        assert row["status"] == "ok", row
        assert row["seq_per_s_per_gpu"] > 0 and row["tflops_per_gpu"] > 0, row
        assert row["replicas"] == 1 and row["seq"] == {1: 32, 2: 64}[row["phase"]]
    # One table, every row in it, the ratio to Model Garden beside each of ours.
    table = [line for line in done.stdout.splitlines() if line.startswith("| tiny |")]
    assert len(table) == len(rows) + len(memory)
    assert all(line.split(" | ")[10] != "-" for line in table if "| ours |" in line)


def _args(*argv):
    return accelerator_check.parse_args(list(argv))


def test_gpu_matrix_runs_the_headline_first_and_can_be_narrowed():
    rows = accelerator_check.plan_rows(_args())
    # 2 models x 2 phases x 3 precisions x 2 XLA settings x 2 peers, and the 2 memory rows.
    assert len(rows) == 48 + 2
    first = [(r["config"], r["phase"], r["precision"], r["xla"], r["peer"]) for r in rows[:4]]
    assert first == [
        ("large", 1, "mixed_bfloat16", True, "ours"),
        ("large", 1, "mixed_bfloat16", True, "model_garden"),
        ("large", 2, "mixed_bfloat16", True, "ours_auto"),
        ("large", 2, "mixed_bfloat16", True, "ours_auto_ckpt"),
    ]
    assert [(r["seq"], r["batch"]) for r in rows[2:4]] == [(512, 32), (512, 32)]
    rows = rows[:2] + rows[4:]
    assert (rows[0]["seq"], rows[0]["preds"], rows[0]["batch"]) == (128, 20, 128)
    sizes = {(r["config"], r["phase"]): (r["seq"], r["preds"], r["batch"]) for r in rows}
    assert sizes[("base", 2)] == (512, 80, 64) and sizes[("large", 2)] == (512, 80, 32)
    narrowed = accelerator_check.plan_rows(
        _args("--configs", "base", "--phases", "2", "--precisions", "float32", "--xla", "off")
    )
    assert [(r["config"], r["phase"], r["peer"]) for r in narrowed] == [
        ("base", 2, "ours"),
        ("base", 2, "model_garden"),
    ]


def test_rows_beyond_the_budget_are_skipped_not_run(tmp_path):
    args = _args("--peers", "ours", "--configs", "base")
    args.num_gpus = 1
    rows = accelerator_check.plan_rows(args)
    accelerator_check.add_data(rows, args, str(tmp_path))
    # The batch on the command line is the global one: per GPU times the GPUs.
    assert rows[0]["cli"][rows[0]["cli"].index("--batch") + 1] == "256"
    saves = []
    accelerator_check.run_rows(rows, args, time.monotonic() - 1, lambda: saves.append(1))
    assert {r["status"] for r in rows} == {"skipped (budget)"}
    assert len(saves) == len(rows)
    assert "skipped (budget)" in accelerator_check.table(rows, args)
