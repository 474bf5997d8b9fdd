"""Reference examples and features from the original ``bert.run_classifier``.

Usage::

    python -m tests.oracles.original_classifier_data --tasks cola=DIR,mrpc=DIR2 \
        --vocab_file V --max_seq_lengths 12,64 --out_dir D [--record_task mrpc] \
        [--processor_files mine=path/to/file.py:MyProcessor,...]

For each task, runs the original processor (``ColaProcessor``, ``MnliProcessor``,
``MrpcProcessor``, ``XnliProcessor``, or a user's processor file named by
``--processor_files``) on its data directory, every available set through the original
``convert_single_example`` at each max_seq_length, and writes ``result.json``::

    {task: {set: {"examples": [[guid, text_a, text_b, label], ...],
                  "features": {length: [[input_ids, input_mask, segment_ids, label_id,
                                         is_real_example], ...]},
                  "logs": {length: [log message, ...]}}},
     "padding": {length: [input_ids, input_mask, segment_ids, label_id, is_real_example]}}

With ``--record_task``, the training set of that task is also written by the original
``file_based_convert_examples_to_features`` to ``<task>_train.tf_record`` (first length).
"""

import argparse
import importlib.util
import json
import logging
import os
import sys

_SETS = {
    "cola": ("train", "dev", "test"),
    "mnli": ("train", "dev", "test"),
    "mrpc": ("train", "dev", "test"),
    "xnli": ("train", "dev"),
}


def _row(feature):
    return [
        list(feature.input_ids),
        list(feature.input_mask),
        list(feature.segment_ids),
        int(feature.label_id),
        bool(feature.is_real_example),
    ]


def _user_processor(name, spec, run_classifier, tokenization):
    """The class `spec` (`path.py:ClassName`) names, loaded as the original's users ran it.

    Their file sat beside the original's scripts and imported `run_classifier` and
    `tokenization` by those names: here they are the modules of the installed `bert` package
    (the same objects, so the original's flags are not defined twice).
    """
    path, class_name = spec.rsplit(":", 1)
    sys.modules["run_classifier"] = run_classifier
    sys.modules["tokenization"] = tokenization
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    module_spec = importlib.util.spec_from_file_location(f"user_processor_{name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, class_name)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", required=True, help="comma-separated task=data_dir")
    parser.add_argument("--vocab_file", required=True)
    parser.add_argument("--max_seq_lengths", default="128")
    parser.add_argument("--do_lower_case", type=int, default=1)
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--record_task", default="")
    parser.add_argument(
        "--processor_files", default="", help="comma-separated task=path/to/file.py:ClassName"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

    from tests.oracles import LogCollector, contrib_stub

    contrib_stub.install()
    from absl import flags
    from bert import run_classifier, tokenization

    # run_classifier defines its flags at import; the tokenizer reads one of them.
    flags.FLAGS.mark_as_parsed()
    processors = {
        "cola": run_classifier.ColaProcessor,
        "mnli": run_classifier.MnliProcessor,
        "mrpc": run_classifier.MrpcProcessor,
        "xnli": run_classifier.XnliProcessor,
    }
    sets = dict(_SETS)
    for item in filter(None, args.processor_files.split(",")):
        task, spec = item.split("=", 1)
        processors[task] = _user_processor(task, spec, run_classifier, tokenization)
        sets[task] = ("train", "dev", "test")
    tokenizer = tokenization.FullTokenizer(args.vocab_file, bool(args.do_lower_case))
    lengths = [int(x) for x in args.max_seq_lengths.split(",")]
    # As the original's main(); the examples are logged at INFO.
    run_classifier.tf.logging.set_verbosity(run_classifier.tf.logging.INFO)
    collector = LogCollector()
    logging.getLogger("tensorflow").addHandler(collector)
    result = {}
    for item in args.tasks.split(","):
        task, data_dir = item.split("=", 1)
        processor = processors[task]()
        labels = processor.get_labels()
        result[task] = {}
        for set_name in sets[task]:
            examples = getattr(processor, f"get_{set_name}_examples")(data_dir)
            entry = {
                "examples": [[e.guid, e.text_a, e.text_b, e.label] for e in examples],
                "features": {},
                "logs": {},
            }
            for length in lengths:
                collector.take()
                entry["features"][length] = [
                    _row(run_classifier.convert_single_example(i, e, labels, length, tokenizer))
                    for i, e in enumerate(examples)
                ]
                entry["logs"][length] = collector.take()
            result[task][set_name] = entry
        if task == args.record_task:
            run_classifier.file_based_convert_examples_to_features(
                processor.get_train_examples(data_dir),
                labels,
                lengths[0],
                tokenizer,
                os.path.join(args.out_dir, f"{task}_train.tf_record"),
            )
    padding = run_classifier.PaddingInputExample()
    result["padding"] = {
        length: _row(run_classifier.convert_single_example(0, padding, ["0"], length, tokenizer))
        for length in lengths
    }
    with open(os.path.join(args.out_dir, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
