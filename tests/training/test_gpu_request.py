"""GPU strategies at start-up: no GPU visible, too few, --num_gpus selecting mirrored, and the
CPU replicas that only an explicit --num_cpu_devices allows."""

import types

import pytest
import tensorflow as tf

from fileio.errors import UserError
from training.strategy import check_gpu_request, create_strategy

NO_GPU = (
    "asks for GPUs but TensorFlow sees none on this machine: install GPU support with "
    "`pip install -r requirements-gpu.txt` (or run the container of docs/gpu_and_containers.md), "
    "check that `nvidia-smi` lists the GPUs (if not, install the NVIDIA driver) and that "
    "CUDA_VISIBLE_DEVICES does not hide them, or pass --num_cpu_devices=N to test on N replicas "
    "on the CPU."
)


def test_mirrored_without_gpus_says_how_to_install_them():
    with pytest.raises(UserError) as err:
        check_gpu_request("mirrored", None, None, visible_gpus=0)
    assert str(err.value) == "--strategy=mirrored " + NO_GPU
    with pytest.raises(UserError) as err:
        check_gpu_request("mirrored", 2, None, visible_gpus=0)
    assert str(err.value) == "--num_gpus=2 " + NO_GPU


def test_cpu_replicas_only_when_asked_for():
    check_gpu_request("mirrored", None, 2, visible_gpus=0)
    check_gpu_request("mirrored", 2, 2, visible_gpus=0)
    with pytest.raises(UserError, match=r"^--num_cpu_devices=0 is not a number of devices"):
        check_gpu_request("mirrored", None, 0, visible_gpus=0)
    # The other strategies need no GPU: one_device falls back to the CPU as before.
    for name in ("one_device", "multi_worker_mirrored", "tpu"):
        check_gpu_request(name, None, None, visible_gpus=0)


def test_more_gpus_than_visible_names_both_numbers():
    check_gpu_request("mirrored", 2, None, visible_gpus=2)
    check_gpu_request("mirrored", None, None, visible_gpus=1)
    with pytest.raises(UserError) as err:
        check_gpu_request("mirrored", 4, None, visible_gpus=2)
    assert str(err.value) == (
        "--num_gpus=4 asks for 4 GPUs but TensorFlow sees 2 on this machine: pass --num_gpus=2 "
        "or fewer (--strategy=mirrored alone uses all of them)."
    )
    with pytest.raises(UserError, match=r"^--num_gpus=0 is not a number of GPUs"):
        check_gpu_request("mirrored", 0, None, visible_gpus=2)


def test_create_strategy_checks_before_configuring_devices(monkeypatch):
    """The refusal comes before the CPU is split into logical devices (nothing to undo)."""
    calls = []
    listed = tf.config.list_physical_devices

    def physical(kind=None):
        calls.append(kind)
        return [] if kind == "GPU" else listed(kind)

    monkeypatch.setattr(tf.config, "list_physical_devices", physical)
    monkeypatch.setattr(
        tf.config,
        "set_logical_device_configuration",
        lambda *a: pytest.fail("devices configured before the GPU check"),
    )
    with pytest.raises(UserError, match="^--strategy=mirrored asks for GPUs"):
        create_strategy("mirrored")
    assert calls == ["GPU"]


class _Flags(types.SimpleNamespace):
    """The flag values `strategy_name` reads."""


@pytest.mark.parametrize(
    "strategy,use_tpu,num_gpus,expected",
    [
        ("one_device", False, None, "one_device"),
        ("one_device", False, 2, "mirrored"),
        ("mirrored", False, 1, "mirrored"),
        ("mirrored", False, None, "mirrored"),
        ("one_device", True, None, "tpu"),
    ],
)
def test_num_gpus_selects_mirrored(strategy, use_tpu, num_gpus, expected):
    from command_line.flags import strategy_name

    flags = _Flags(strategy=strategy, use_tpu=use_tpu, num_gpus=num_gpus)
    assert strategy_name(flags) == expected


def test_num_gpus_with_tpu_or_several_hosts_is_refused():
    from command_line.flags import strategy_name

    with pytest.raises(UserError) as err:
        strategy_name(_Flags(strategy="multi_worker_mirrored", use_tpu=False, num_gpus=2))
    assert str(err.value) == (
        "--num_gpus=2 selects --strategy=mirrored (the GPUs of this host) and cannot be combined "
        "with --strategy=multi_worker_mirrored: leave one of them out."
    )
    with pytest.raises(UserError, match="cannot be combined with --use_tpu: leave one"):
        strategy_name(_Flags(strategy="one_device", use_tpu=True, num_gpus=1))
