"""The shared training core and run_pretraining.py (tiny configs)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from modeling import checkpoint
from modeling.bert_model import BertModel
from modeling.config import BertConfig
from modeling.heads import PretrainingHeads
from tests.helpers.pretraining_records import TINY_CONFIG, write_config, write_records
from tests.helpers.scripts import ENV, REPO, run_in_repo
from training.tasks import PretrainingTask


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretraining_data")
    write_records(root / "data.tfrecord", num_examples=256)
    write_config(root / "bert_config.json")
    return root


def _harness(data, out_dir, result, *args, env=None):
    cmd = [
        sys.executable,
        "-m",
        "tests.helpers.train_tiny",
        "--data",
        str(data / "data.tfrecord"),
        "--out_dir",
        str(out_dir),
        "--result",
        str(result),
        *map(str, args),
    ]
    return subprocess.Popen(
        cmd, cwd=REPO, env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _run_harness(data, out_dir, result, *args):
    proc = _harness(data, out_dir, result, *args)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return dict(np.load(result))


def _max_weight_diff(a, b):
    return max(float(np.abs(a[k] - b[k]).max()) for k in a if k.startswith("w/"))


def test_task_losses_match_the_original(original_gelu):
    """The task's loss terms reproduce run_pretraining's get_masked_lm_output and
    get_next_sentence_output (oracle) on a padded batch with zero-weight predictions."""
    ref = original_gelu["ref"]
    config = BertConfig.from_json_file(original_gelu["config"])
    task = PretrainingTask(config)
    task.build_model()
    checkpoint.load_tf1_checkpoint(
        original_gelu["ckpt"], bert_model=task.model.bert, pretraining_heads=task.model.cls
    )
    features = {
        k: ref[k]
        for k in (
            "input_ids",
            "input_mask",
            "segment_ids",
            "masked_lm_positions",
            "masked_lm_ids",
            "masked_lm_weights",
            "next_sentence_labels",
        )
    }
    aux = task.forward(features, training=False)
    numerators = task.loss_numerators(aux)
    weights = task.loss_weights(features)
    mlm = numerators[0] / (weights[0] + task.loss_epsilons[0])
    nsp = numerators[1] / (weights[1] + task.loss_epsilons[1])
    np.testing.assert_allclose(mlm, ref["masked_lm_loss"], atol=1e-5)
    np.testing.assert_allclose(nsp, ref["next_sentence_loss"], atol=1e-5)
    np.testing.assert_allclose(aux["mlm_loss"], ref["masked_lm_example_loss"], atol=1e-5)
    sums = task.metric_sums(aux)
    w = ref["masked_lm_weights"].reshape(-1)
    predicted = np.argmax(ref["masked_lm_log_probs"], -1)
    expected_acc = np.sum(w * (predicted == ref["masked_lm_ids"].reshape(-1))) / np.sum(w)
    np.testing.assert_allclose(
        sums["masked_lm_accuracy"][0] / sums["masked_lm_accuracy"][1], expected_acc, atol=1e-6
    )


def test_mirrored_and_accumulation_match_one_device(data, tmp_path):
    evaluate = ("--eval_steps", 3)
    base = _run_harness(data, tmp_path / "a", tmp_path / "a.npz", "--batch", 8, *evaluate)
    mirrored = _run_harness(
        data,
        tmp_path / "b",
        tmp_path / "b.npz",
        "--batch",
        8,
        "--strategy",
        "mirrored",
        "--num_cpu_devices",
        2,
        *evaluate,
    )
    accumulated = _run_harness(
        data, tmp_path / "c", tmp_path / "c.npz", "--batch", 8, "--accumulation", 4
    )
    assert int(mirrored["replicas"]) == 2
    assert len(base["losses"]) == 10
    assert np.abs(base["losses"] - mirrored["losses"]).max() <= 1e-5
    assert np.abs(base["losses"] - accumulated["losses"]).max() <= 1e-5
    assert _max_weight_diff(base, mirrored) <= 1e-5
    assert _max_weight_diff(base, accumulated) <= 1e-5
    # Evaluation reads its input on the caller's thread on one CPU replica and through the
    # distributed iterator on two; the metrics agree.
    assert not base["background"] and mirrored["background"]
    eval_keys = [k for k in base if k.startswith("eval/")]
    assert "eval/masked_lm_accuracy" in eval_keys and "eval/loss" in eval_keys
    for key in eval_keys:
        np.testing.assert_allclose(mirrored[key], base[key], rtol=0, atol=1e-5, err_msg=key)
    # Not trivially equal: training moved the weights.
    first = BertModel(BertConfig(**json.load(open(data / "bert_config.json"))))
    assert float(np.abs(base["w/bert/pooler/dense/kernel"]).max()) > 0
    del first


def test_xla_with_fused_update_matches_plain_step(data, tmp_path):
    """--use_xla on one replica compiles the update too; training is unchanged by it."""
    plain = _run_harness(data, tmp_path / "a", tmp_path / "a.npz", "--batch", 8)
    xla = _run_harness(data, tmp_path / "b", tmp_path / "b.npz", "--batch", 8, "--xla")
    assert len(xla["losses"]) == 10
    assert np.abs(plain["losses"] - xla["losses"]).max() <= 1e-4
    assert _max_weight_diff(plain, xla) <= 1e-4


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_multi_worker_mirrored_two_processes(data, tmp_path):
    ports = [_free_port(), _free_port()]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for index in range(2):
        env = {
            **ENV,
            "TF_CONFIG": json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": index}}
            ),
        }
        procs.append(
            _harness(
                data,
                tmp_path / "out",
                tmp_path / f"w{index}.npz",
                "--batch",
                8,
                "--steps",
                4,
                "--strategy",
                "multi_worker_mirrored",
                env=env,
            )
        )
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
    w0, w1 = dict(np.load(tmp_path / "w0.npz")), dict(np.load(tmp_path / "w1.npz"))
    assert int(w0["replicas"]) == 2
    np.testing.assert_array_equal(w0["losses"], w1["losses"])
    assert _max_weight_diff(w0, w1) == 0.0


def _pretrain_cmd(data, out_dir, *extra):
    return [
        sys.executable,
        os.path.join(REPO, "run_pretraining.py"),
        f"--input_file={data / 'data.tfrecord'}",
        f"--output_dir={out_dir}",
        f"--bert_config_file={data / 'bert_config.json'}",
        "--do_train",
        "--train_batch_size=8",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--num_warmup_steps=5",
        "--learning_rate=1e-3",
        "--iterations_per_loop=1",
        "--log_every_steps=1",
        "--deterministic",
        *extra,
    ]


def _final_weights(out_dir):
    return checkpoint.read_checkpoint(str(out_dir / "bert_model.ckpt"))


def test_resume_after_kill_equals_uninterrupted_run(data, tmp_path):
    steps = ["--num_train_steps=40", "--save_checkpoints_steps=5"]
    full = run_in_repo(_pretrain_cmd(data, tmp_path / "full", *steps), timeout=600)
    assert full.returncode == 0, full.stderr[-3000:]
    victim = subprocess.Popen(
        _pretrain_cmd(data, tmp_path / "killed", *steps),
        cwd=REPO,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    target = tmp_path / "killed" / f"model.ckpt-{int(np.random.default_rng().integers(1, 5)) * 5}"
    deadline = time.time() + 300
    while not os.path.exists(str(target) + ".index") and victim.poll() is None:
        assert time.time() < deadline
        time.sleep(0.05)
    victim.kill()
    victim.wait()
    assert not os.path.exists(tmp_path / "killed" / "bert_model.ckpt.index")
    resumed = run_in_repo(_pretrain_cmd(data, tmp_path / "killed", *steps), timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resumed from" in resumed.stderr
    a, b = _final_weights(tmp_path / "full"), _final_weights(tmp_path / "killed")
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def _eval_results(out):
    return dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())


def test_training_learns_and_exports_original_layout(data, tmp_path):
    before = run_in_repo(
        [
            c
            for c in _pretrain_cmd(
                data, tmp_path / "before", "--do_eval", "--eval_batch_size=16", "--max_eval_steps=8"
            )
            if c != "--do_train"
        ],
        timeout=600,
    )
    assert before.returncode == 0, before.stderr[-3000:]
    start = _eval_results(tmp_path / "before")
    assert start["global_step"] == "0"
    out = tmp_path / "out"
    result = run_in_repo(
        _pretrain_cmd(
            data,
            out,
            "--num_train_steps=400",
            "--save_checkpoints_steps=200",
            "--do_eval",
            "--eval_batch_size=16",
            "--max_eval_steps=8",
            "--train_batch_size=32",
            "--num_warmup_steps=30",
            "--learning_rate=3e-3",
            "--iterations_per_loop=100",
            "--log_every_steps=100",
        ),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "step 400/400 loss=" in result.stderr and "examples/s ETA" in result.stderr
    lines = (out / "eval_results.txt").read_text().splitlines()
    keys = [line.split(" = ")[0] for line in lines]
    assert (
        keys
        == sorted(keys)
        == [
            "global_step",
            "loss",
            "masked_lm_accuracy",
            "masked_lm_loss",
            "next_sentence_accuracy",
            "next_sentence_loss",
        ]
    )
    values = _eval_results(out)
    assert values["global_step"] == "400"
    # Chance is 1/99 for masked tokens and 1/2 for NSP; the data make both learnable.
    assert float(start["masked_lm_accuracy"]) < 0.1 and float(values["masked_lm_accuracy"]) > 0.5
    assert float(start["next_sentence_accuracy"]) < 0.7
    assert float(values["next_sentence_accuracy"]) > 0.9
    assert float(values["loss"]) < float(start["loss"]) - 1.0
    assert os.path.isdir(out / "train") and tf.io.gfile.glob(str(out / "train" / "events.*"))
    config = BertConfig.from_json_file(str(out / "bert_config.json"))
    model, heads = BertModel(config), PretrainingHeads(config)
    checkpoint.load_tf1_checkpoint(
        str(out / "bert_model.ckpt"), bert_model=model, pretraining_heads=heads
    )
    saved = checkpoint.read_checkpoint(str(out / "model.ckpt-400"), include_optimizer=True)
    assert saved["global_step"] == 400 and "bert/pooler/dense/kernel/adam_m" in saved


def test_sigterm_saves_and_exits(data, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        _pretrain_cmd(data, out, "--num_train_steps=100000", "--save_checkpoints_steps=100000"),
        cwd=REPO,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 300
    while not tf.io.gfile.glob(str(out / "train" / "events.*")):
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "Stopped by signal" in err
    saved = [p for p in os.listdir(out) if p.startswith("model.ckpt-") and p.endswith(".index")]
    assert len(saved) == 1


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--do_train=false"], "At least one of `do_train` or `do_eval` must be True."),
        (["--input_file=/nonexistent/*.tfrecord"], "no file matches '/nonexistent/*.tfrecord'"),
        (
            ["--max_seq_length=64"],
            "feature 'input_ids' has length 32 but the flags expect 64; pass the --max_seq_length",
        ),
        (
            ["--max_predictions_per_seq=20"],
            "has length 5 but the flags expect 20; pass the --max_predictions_per_seq",
        ),
    ],
)
def test_bad_input_is_a_clear_error(data, tmp_path, extra, message):
    cmd = [
        c
        for c in _pretrain_cmd(data, tmp_path / "o", "--num_train_steps=1")
        if not any(c.startswith(e.split("=")[0] + "=") for e in extra)
    ]
    result = run_in_repo(cmd + extra, timeout=300)
    assert result.returncode != 0
    assert message in result.stderr


def test_init_checkpoint_mismatch_is_a_clear_error(data, tmp_path, original_gelu):
    result = run_in_repo(
        _pretrain_cmd(
            data,
            tmp_path / "o",
            "--num_train_steps=1",
            f"--init_checkpoint={original_gelu['ckpt']}",
        ),
        timeout=300,
    )
    assert result.returncode != 0
    assert (
        "shape mismatch: bert/embeddings/token_type_embeddings: checkpoint [3, 32] vs model [2, 32]"
    ) in result.stderr


def test_nan_loss_stops_with_the_step(data, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    write_records(bad / "data.tfrecord", num_examples=64)
    write_config(bad / "bert_config.json")
    # An infinite masked-LM weight makes the loss NaN from the first step on.
    records = [
        tf.train.Example.FromString(r.numpy())
        for r in tf.data.TFRecordDataset(str(bad / "data.tfrecord"))
    ]
    with tf.io.TFRecordWriter(str(bad / "data.tfrecord")) as writer:
        for example in records:
            example.features.feature["masked_lm_weights"].float_list.value[0] = float("inf")
            writer.write(example.SerializeToString())
    result = run_in_repo(_pretrain_cmd(bad, tmp_path / "o", "--num_train_steps=5"), timeout=300)
    assert result.returncode != 0
    assert "Loss is nan at step 1: training stopped" in result.stderr
    assert not tf.io.gfile.glob(str(tmp_path / "o" / "model.ckpt-*"))


@pytest.mark.parametrize(
    "extra",
    [
        ["--precision=mixed_bfloat16", "--use_xla", "--num_accumulation_steps=2"],
        ["--precision=mixed_float16", "--optimizer=lamb"],
    ],
)
def test_precision_xla_lamb_and_accumulation_train(data, tmp_path, extra):
    out = tmp_path / "o"
    result = run_in_repo(
        _pretrain_cmd(
            data,
            out,
            "--num_train_steps=60",
            "--train_batch_size=16",
            "--learning_rate=3e-3",
            "--iterations_per_loop=20",
            "--log_every_steps=20",
            *extra,
        ),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    losses = [
        float(line.split("loss=")[1].split()[0])
        for line in result.stderr.splitlines()
        if "/60 loss=" in line
    ]
    assert len(losses) == 3 and all(np.isfinite(losses)) and losses[-1] < losses[0]
    saved = checkpoint.read_checkpoint(str(out / "model.ckpt-60"), include_optimizer=True)
    assert saved["bert/pooler/dense/kernel"].dtype == np.float32
    if "--precision=mixed_float16" in extra:
        assert saved["_training_state/loss_scale"] > 0


def test_task_losses_match_the_original_on_real_pretraining_data(tmp_path):
    """A batch written by create_pretraining_data.py, a fixed random checkpoint: the task's
    losses and metrics equal the original get_masked_lm_output/get_next_sentence_output."""
    from tests.oracles import run_oracle

    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away", "##s", "."]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    vocab += [f"[unused{i}]" for i in range(99 - len(vocab))]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    rng = np.random.default_rng(5)
    docs = [
        "\n".join(
            " ".join(rng.choice(words[:10], rng.integers(3, 9))) + " ."
            for _ in range(rng.integers(2, 6))
        )
        for _ in range(30)
    ]
    (tmp_path / "corpus.txt").write_text("\n\n".join(docs) + "\n")
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "create_pretraining_data.py"),
            f"--input_file={tmp_path / 'corpus.txt'}",
            f"--output_file={tmp_path / 'data.tfrecord'}",
            f"--vocab_file={tmp_path / 'vocab.txt'}",
            "--max_seq_length=16",
            "--max_predictions_per_seq=4",
            "--dupe_factor=1",
        ],
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    from data import input_pipeline

    batch = next(
        iter(
            input_pipeline.pretraining_dataset(
                [str(tmp_path / "data.tfrecord")], 16, 4, 4, is_training=False
            )
        )
    )
    batch = {k: v.numpy() for k, v in batch.items()}
    batch["next_sentence_labels"] = batch["next_sentence_labels"].reshape(-1)
    np.savez(tmp_path / "batch.npz", **batch)
    run_oracle(
        "original_bert",
        ["--out_dir", tmp_path / "oracle", "--with_heads", "--inputs", tmp_path / "batch.npz"],
    )
    ref = dict(np.load(tmp_path / "oracle" / "reference.npz"))
    config = BertConfig.from_json_file(str(tmp_path / "oracle" / "bert_config.json"))
    task = PretrainingTask(config)
    task.build_model()
    checkpoint.load_tf1_checkpoint(
        str(tmp_path / "oracle" / "bert_model.ckpt"),
        bert_model=task.model.bert,
        pretraining_heads=task.model.cls,
    )
    aux = task.forward(batch, training=False)
    numerators, weights = task.loss_numerators(aux), task.loss_weights(batch)
    np.testing.assert_allclose(
        numerators[0] / (weights[0] + 1e-5), ref["masked_lm_loss"], atol=1e-5
    )
    np.testing.assert_allclose(numerators[1] / weights[1], ref["next_sentence_loss"], atol=1e-5)
    sums = task.metric_sums(aux)
    w = batch["masked_lm_weights"].reshape(-1)
    expected = np.sum(
        w * (np.argmax(ref["masked_lm_log_probs"], -1) == batch["masked_lm_ids"].reshape(-1))
    ) / np.sum(w)
    np.testing.assert_allclose(
        sums["masked_lm_accuracy"][0] / sums["masked_lm_accuracy"][1], expected, atol=1e-6
    )
    nsp_expected = np.mean(
        np.argmax(ref["next_sentence_log_probs"], -1) == batch["next_sentence_labels"]
    )
    np.testing.assert_allclose(
        sums["next_sentence_accuracy"][0] / sums["next_sentence_accuracy"][1],
        nsp_expected,
        atol=1e-6,
    )


def test_predict_with_xla_matches_eager_model_in_order(tmp_path):
    """Trainer.predict (with and without XLA, short last batch) equals calling the model."""
    from training.loop import TrainConfig, Trainer
    from training.strategy import create_strategy
    from training.tasks import ClassifierTask

    config = BertConfig(**TINY_CONFIG)
    rng = np.random.default_rng(3)
    n, seq = 10, 12
    lengths = rng.integers(3, seq + 1, n)
    mask = (np.arange(seq)[None] < lengths[:, None]).astype(np.int32)
    features = {
        "input_ids": rng.integers(1, TINY_CONFIG["vocab_size"], (n, seq)).astype(np.int32) * mask,
        "input_mask": mask,
        "segment_ids": (np.arange(seq)[None] >= lengths[:, None] // 2).astype(np.int32) * mask,
        "label_ids": rng.integers(0, 3, n).astype(np.int32),
    }
    dataset = tf.data.Dataset.from_tensor_slices(features).batch(4)  # 4 + 4 + 2
    strategy = create_strategy("one_device")
    outputs = {}
    for xla in (False, True):
        keras.utils.set_random_seed(7)
        trainer = Trainer(
            ClassifierTask(config, 3),
            strategy,
            TrainConfig(output_dir=str(tmp_path / str(xla)), jit_compile=xla),
        )
        outputs[xla] = trainer.predict(dataset, lambda aux: {"p": aux["predictions"]})["p"]
        expected = trainer.task.forward(features, training=False)["predictions"].numpy()
        np.testing.assert_allclose(outputs[xla], expected, rtol=0, atol=1e-5)
    assert outputs[False].shape == (n, 3)
    np.testing.assert_allclose(outputs[True], outputs[False], rtol=0, atol=1e-5)
