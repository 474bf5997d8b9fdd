"""export_model.py --task=classifier with --long_inputs=head_tail and windows: the exported
text-in model answers any text as run_classifier's Python features (`data.glue.long_inputs`)
run through the same model one window at a time, aggregated per example."""

import os
import sys

import numpy as np
import pytest

from tests.helpers.scripts import REPO, run_in_repo
from tests.serving.fresh_process import export_here

_S = 16
_WORDS = ["the", "man", "went", "to", "market", "river", "a", "b", "c", "d"]
# Words of the vocabulary and words read letter by letter, so that a sentence of a few words
# spans several 14-piece windows.
_VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    *_WORDS,
    *"efghijklmnopqrstuvwxyz",
    *("##" + c for c in "abcdefghijklmnopqrstuvwxyz"),
]
_LONG = "the man went to the market yesterday and then walked along the river to a garden"
_PAIRS = [
    ("the man went to the market", "a b c"),
    (_LONG, "the river"),
    ("a b", _LONG + " " + _LONG),
    (_LONG, _LONG),
    ("", ""),
    ("hello world", ""),
    ("", "the river was quiet"),
    (_LONG + " again", "   "),
]


def _softmax(logits):
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def _aggregate(logits, owners, how, is_regression):
    """Each example's prediction from its windows' logits, as the docs define it."""
    owners = np.asarray(owners)
    result = []
    for example in range(owners.max() + 1):
        mine = logits[owners == example].astype(np.float64)
        if is_regression:
            result.append(mine[:, 0].max() if how == "max" else mine[:, 0].mean())
            continue
        probabilities = _softmax(mine)
        if how == "mean":
            result.append(probabilities.mean(0))
        elif how == "max":
            best = probabilities.max(0)
            result.append(best / best.sum())
        elif how == "mean_logits":
            result.append(_softmax(mine.mean(0)))
        else:
            n = len(mine)
            shares = np.bincount(probabilities.argmax(1), minlength=mine.shape[1]) / n
            weight = 1 / (2 * n)
            result.append((shares + weight * probabilities.mean(0)) / (1 + weight))
    return np.array(result)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """Random tiny classifiers (MRPC, STS-B) saved as original checkpoints, each in a
    folder of its own, with the vocabulary and config they share."""
    sys.path.insert(0, REPO)
    import tensorflow as tf

    from data.glue.processors import get_processor
    from modeling import tf1_checkpoint
    from tests.helpers.tiny_config import tiny_config, write_tiny_config
    from training.tasks import ClassifierTask

    root = tmp_path_factory.mktemp("long_inputs")
    (root / "vocab.txt").write_text("\n".join(_VOCAB) + "\n")
    write_tiny_config(root / "bert_config.json", vocab_size=len(_VOCAB))
    runs = {"root": root}
    rng = np.random.default_rng(0)
    for task_name in ("MRPC", "STS-B"):
        processor = get_processor(task_name)
        task = ClassifierTask(
            tiny_config(vocab_size=len(_VOCAB)),
            len(processor.get_labels()),
            processor.is_regression,
        )
        task.build_model()
        arrays = tf1_checkpoint.variables_to_arrays(task.variable_map())
        # Logits of a few units rather than near zero, so windows disagree and votes matter.
        arrays["output_weights"] = rng.normal(0, 2, arrays["output_weights"].shape)
        arrays["output_weights"] = arrays["output_weights"].astype(np.float32)
        tf1_checkpoint.assign_arrays(task.variable_map(), arrays, "test weights")
        folder = root / task_name
        folder.mkdir()
        tf1_checkpoint.save_tf1_checkpoint(arrays, str(folder / "model.ckpt"))
        runs[task_name] = (task, processor)
    runs["tf"] = tf
    return runs


def _python_predictions(runs, task_name, how, long_inputs, head_tokens=None, doc_stride=None):
    """run_classifier's features of `_PAIRS`, the model on each window alone, aggregated."""
    from data.glue.long_inputs import convert_long_examples
    from data.glue.processor_base import InputExample
    from data.tokenization.full_tokenizer import FullTokenizer

    tf = runs["tf"]
    task, processor = runs[task_name]
    labels = processor.get_labels()
    examples = [
        InputExample(
            str(i),
            a,
            b if processor.has_text_b else None,
            "0" if processor.is_regression else labels[0],
        )
        for i, (a, b) in enumerate(_PAIRS)
    ]
    tokenizer = FullTokenizer(str(runs["root"] / "vocab.txt"), do_lower_case=True)
    features, owners = convert_long_examples(
        examples, labels, _S, tokenizer, processor.is_regression, long_inputs, head_tokens,
        doc_stride,
    )  # fmt: skip
    logits = np.concatenate(
        [
            task.model(
                {k: tf.constant([getattr(f, k)], tf.int32) for k in _INPUT_KEYS}, training=False
            ).numpy()
            for f in features
        ]
    )
    return _aggregate(logits, owners, how, processor.is_regression), owners


_INPUT_KEYS = ("input_ids", "input_mask", "segment_ids")


def _serve(export_dir):
    """The export's `serving_default` on `_PAIRS` as one batch, and on each pair alone.

    Loaded in this process: tests/serving/test_export_classifier.py loads the classifier export
    where only tensorflow and tensorflow_text exist; the long-input ops are core TensorFlow.
    """
    import tensorflow as tf

    serve = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
    texts = {"text_a": [a for a, _ in _PAIRS], "text_b": [b for _, b in _PAIRS]}
    batch = {
        k: v.numpy() for k, v in serve(**{k: tf.constant(v) for k, v in texts.items()}).items()
    }
    alone = [
        serve(**{k: tf.constant(v[i : i + 1]) for k, v in texts.items()})
        for i in range(len(_PAIRS))
    ]
    return batch, {k: np.concatenate([a[k].numpy() for a in alone]) for k in batch}


def _export_from_flags_txt(root):
    """export_model.py's command line with no --long_inputs flag: a run trained with windows
    (its flags.txt beside the checkpoint) exports windowed."""
    (root / "MRPC" / "flags.txt").write_text(
        "# run_classifier.py: repeat with --flagfile=<this file>\n"
        f"--doc_stride=4\n--long_inputs=windows\n--max_seq_length={_S}\n--task_name=MRPC\n"
        "--window_aggregation=vote\n"
    )
    export = root / "exports" / "vote"
    result = run_in_repo(
        [
            sys.executable,
            os.path.join(REPO, "export_model.py"),
            "--task=classifier",
            f"--checkpoint={root / 'MRPC'}",
            f"--bert_config_file={root / 'bert_config.json'}",
            f"--vocab_file={root / 'vocab.txt'}",
            f"--export_dir={export}",
        ],
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for setting in ("long_inputs=windows", "window_aggregation=vote", "doc_stride=4"):
        assert f"--{setting} from" in result.stderr
    return export


# (export, task, settings): pairs (with empty texts, cut or windowed) and regression; "vote"
# comes from the run's flags.txt alone.
_EXPORTS = [
    ("head_tail", "MRPC", dict(long_inputs="head_tail", head_tokens=3)),
    ("regression_max", "STS-B", dict(long_inputs="windows", window_aggregation="max")),
    ("vote", "MRPC", dict(long_inputs="windows", window_aggregation="vote", doc_stride=4)),
]


@pytest.mark.slow
def test_long_input_exports_answer_as_the_python_features(tiny_runs):
    root = tiny_runs["root"]
    for name, task_name, settings in _EXPORTS:
        if name == "vote":
            export = _export_from_flags_txt(root)
        else:
            export = root / "exports" / name
            export_here(
                root / "bert_config.json",
                task="classifier",
                task_name=task_name,
                checkpoint=root / task_name,
                vocab_file=root / "vocab.txt",
                max_seq_length=_S,
                export_dir=export,
                **settings,
            )
        got, alone = _serve(export)
        expected, owners = _python_predictions(
            tiny_runs,
            task_name,
            settings.get("window_aggregation", "mean"),
            settings["long_inputs"],
            settings.get("head_tokens"),
            settings.get("doc_stride"),
        )
        if settings["long_inputs"] == "windows":
            # Several multi-window rows, and one window for the empty texts.
            assert np.bincount(owners).max() >= 3, name
        key = "score" if tiny_runs[task_name][1].is_regression else "probabilities"
        np.testing.assert_allclose(got[key], expected, atol=1e-5, rtol=0, err_msg=name)
        # Mixed lengths in one batch answer as each text alone.
        np.testing.assert_allclose(alone[key], got[key], atol=1e-5, rtol=0, err_msg=name)
        if key == "probabilities":
            labels = tiny_runs[task_name][1].get_labels()
            expected_labels = [labels[i] for i in np.argmax(expected, axis=1)]
            assert [x.decode() for x in got["label"]] == expected_labels, name


@pytest.mark.parametrize("how", ["mean", "max", "mean_logits", "vote"])
@pytest.mark.parametrize("is_regression", [False, True])
def test_every_aggregation_in_the_graph(how, is_regression):
    """The export's aggregation op on 1 to 5 windows per example, a tied vote included."""
    sys.path.insert(0, REPO)
    import tensorflow as tf

    from serving.exports.long_inputs import aggregate_windows_graph as aggregate_windows

    owners = np.repeat(np.arange(6), [1, 2, 3, 5, 2, 4])
    logits = np.random.default_rng(1).normal(0, 3, (len(owners), 1 if is_regression else 3))
    # Example 1: a tied vote (one window each for classes 0 and 1), the mean probability decides.
    logits[1:3] = np.array([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0]])[:, : logits.shape[1]]
    logits = logits.astype(np.float32)
    got = aggregate_windows(tf.constant(logits), tf.constant(owners), 6, how, is_regression)
    expected = _aggregate(logits, owners, how, is_regression)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("doc_stride", [None, 1, 5, 40])
def test_windows_are_window_pieces(tiny_runs, doc_stride, pairs):
    """The export's windows as run_classifier's features, for single texts (and pairs whose
    text_b is empty) and pairs: every window, in order, packed the same."""
    from data.glue.long_inputs import window_pieces
    from data.tokenization.fast_tokenizer import FastFullTokenizer
    from data.tokenization.full_tokenizer import FullTokenizer
    from data.tokenization.packing import pack_tokens
    from serving.exports.long_inputs import window_inputs

    tf = tiny_runs["tf"]
    vocab = str(tiny_runs["root"] / "vocab.txt")
    full, fast = FullTokenizer(vocab, True), FastFullTokenizer(vocab, do_lower_case=True)
    text_a, text_b = [a for a, _ in _PAIRS], [b for _, b in _PAIRS]
    ids_b = fast.tokenize(tf.constant(text_b)) if pairs else None
    cls, sep = full.vocab["[CLS]"], full.vocab["[SEP]"]
    inputs, rows = window_inputs(
        fast.tokenize(tf.constant(text_a)), ids_b, _S, doc_stride, cls, sep
    )
    expected, owners = [], []
    for index, (a, b) in enumerate(_PAIRS):
        tokens_b = full.tokenize(b) if pairs else None
        for piece_a, piece_b in window_pieces(full.tokenize(a), tokens_b, _S, doc_stride):
            packed = pack_tokens(
                list(piece_a), piece_b and list(piece_b), _S, full.convert_tokens_to_ids
            )
            expected.append((packed.input_ids, packed.input_mask, packed.segment_ids))
            owners.append(index)
    got = zip(*(inputs[k].numpy().tolist() for k in _INPUT_KEYS), strict=True)
    assert list(got) == expected
    assert rows.numpy().tolist() == owners


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("head_tokens", [None, 0, 3, 100])
def test_head_tail_inputs_are_the_python_features(tiny_runs, head_tokens, pairs):
    """The export's head_tail inputs as run_classifier's features (convert_long_examples)."""
    from data.glue.long_inputs import convert_long_examples
    from data.glue.processor_base import InputExample
    from data.tokenization.fast_tokenizer import FastFullTokenizer
    from data.tokenization.full_tokenizer import FullTokenizer
    from serving.exports.long_inputs import head_tail_inputs

    tf = tiny_runs["tf"]
    vocab = str(tiny_runs["root"] / "vocab.txt")
    full, fast = FullTokenizer(vocab, True), FastFullTokenizer(vocab, do_lower_case=True)
    examples = [
        InputExample(str(i), a, b if pairs else None, "0") for i, (a, b) in enumerate(_PAIRS)
    ]
    features, _ = convert_long_examples(
        examples, ["0", "1"], _S, full, long_inputs="head_tail", head_tokens=head_tokens
    )
    ids_b = fast.tokenize(tf.constant([b for _, b in _PAIRS])) if pairs else None
    cls, sep = full.vocab["[CLS]"], full.vocab["[SEP]"]
    ids_a = fast.tokenize(tf.constant([a for a, _ in _PAIRS]))
    inputs = head_tail_inputs(ids_a, ids_b, _S, head_tokens, cls, sep)
    for key in _INPUT_KEYS:
        assert inputs[key].numpy().tolist() == [getattr(f, key) for f in features], key
