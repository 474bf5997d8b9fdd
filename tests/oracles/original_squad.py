"""Reference SQuAD examples, features, records and prediction files from the original
``bert.run_squad``.

Usage::

    python -m tests.oracles.original_squad --plan plan.json --out_dir D

``plan.json`` lists the work::

    {"vocab_file": V, "do_lower_case": true,
     "conversions": [{"name", "input_file", "is_training", "version_2_with_negative",
                      "max_seq_length", "doc_stride", "max_query_length",
                      "record_file" (optional)}],
     "predictions": [{"name", "conversion", "logits" (.npz with unique_ids [N],
                      start_logits and end_logits [N, max_seq_length]), "n_best_size",
                      "max_answer_length", "version_2_with_negative",
                      "null_score_diff_threshold", "verbose_logging", "output_dir"}],
     "final_text": [[pred_text, orig_text, do_lower_case], ...]}

Each conversion runs the original ``read_squad_examples`` and ``convert_examples_to_features``
(features gathered through its callback; with ``record_file`` also written by its
``FeatureWriter``). Each prediction runs the original ``write_predictions`` on the features of a
prediction-mode conversion and the given logits, converted to Python floats as the original's
``main`` does, writing its files to ``output_dir``. ``final_text`` cases go through the original
``get_final_text`` with verbose logging. ``D/result.json`` holds::

    {"conversions": {name: {"examples": [[qas_id, question_text, doc_tokens,
                                          orig_answer_text, start_position, end_position,
                                          is_impossible], ...],
                            "read_logs": [...],
                            "features": [[unique_id, example_index, doc_span_index, tokens,
                                          token_to_orig_map as [[k, v], ...],
                                          token_is_max_context as [[k, v], ...],
                                          input_ids, input_mask, segment_ids, start_position,
                                          end_position, is_impossible], ...],
                            "convert_logs": [...]}},
     "predictions": {name: {"logs": [...]}},
     "final_text": [[text, logs], ...]}
"""

import argparse
import json
import logging
import os


def _example_row(example):
    return [
        example.qas_id,
        example.question_text,
        list(example.doc_tokens),
        example.orig_answer_text,
        example.start_position,
        example.end_position,
        bool(example.is_impossible),
    ]


def _feature_row(feature):
    return [
        feature.unique_id,
        feature.example_index,
        feature.doc_span_index,
        list(feature.tokens),
        [[k, v] for k, v in feature.token_to_orig_map.items()],
        [[k, bool(v)] for k, v in feature.token_is_max_context.items()],
        list(feature.input_ids),
        list(feature.input_mask),
        list(feature.segment_ids),
        feature.start_position,
        feature.end_position,
        feature.is_impossible,
    ]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    parser.add_argument("--out_dir", required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    with open(args.plan, encoding="utf-8") as f:
        plan = json.load(f)

    from tests.oracles import LogCollector, contrib_stub

    contrib_stub.install()
    import numpy as np
    from absl import flags
    from bert import run_squad, tokenization

    # run_squad defines its flags at import and reads several of them inside the functions
    # used here (version_2_with_negative, null_score_diff_threshold, verbose_logging); the
    # tokenizer reads preserve_unused_tokens.
    flags.FLAGS.mark_as_parsed()
    run_squad.tf.logging.set_verbosity(run_squad.tf.logging.INFO)
    collector = LogCollector()
    logging.getLogger("tensorflow").addHandler(collector)
    tokenizer = tokenization.FullTokenizer(plan["vocab_file"], bool(plan["do_lower_case"]))

    result = {"conversions": {}, "predictions": {}, "final_text": []}
    converted = {}
    for job in plan["conversions"]:
        flags.FLAGS.version_2_with_negative = bool(job["version_2_with_negative"])
        collector.take()
        examples = run_squad.read_squad_examples(job["input_file"], job["is_training"])
        read_logs = collector.take()
        features = []
        writer = None
        if job.get("record_file"):
            writer = run_squad.FeatureWriter(job["record_file"], job["is_training"])

        def collect(feature, writer=writer, features=features):
            features.append(feature)
            if writer is not None:
                writer.process_feature(feature)

        run_squad.convert_examples_to_features(
            examples,
            tokenizer,
            job["max_seq_length"],
            job["doc_stride"],
            job["max_query_length"],
            job["is_training"],
            collect,
        )
        if writer is not None:
            writer.close()
        converted[job["name"]] = (examples, features)
        result["conversions"][job["name"]] = {
            "examples": [_example_row(e) for e in examples],
            "read_logs": read_logs,
            "features": [_feature_row(f) for f in features],
            "convert_logs": collector.take(),
        }

    for job in plan["predictions"]:
        flags.FLAGS.version_2_with_negative = bool(job["version_2_with_negative"])
        flags.FLAGS.null_score_diff_threshold = float(job["null_score_diff_threshold"])
        flags.FLAGS.verbose_logging = bool(job["verbose_logging"])
        examples, features = converted[job["conversion"]]
        logits = np.load(job["logits"])
        results = [
            run_squad.RawResult(
                unique_id=int(unique_id),
                start_logits=[float(x) for x in start.flat],
                end_logits=[float(x) for x in end.flat],
            )
            for unique_id, start, end in zip(
                logits["unique_ids"], logits["start_logits"], logits["end_logits"], strict=True
            )
        ]
        out = job["output_dir"]
        os.makedirs(out, exist_ok=True)
        collector.take()
        run_squad.write_predictions(
            examples,
            features,
            results,
            job["n_best_size"],
            job["max_answer_length"],
            plan["do_lower_case"],
            os.path.join(out, "predictions.json"),
            os.path.join(out, "nbest_predictions.json"),
            os.path.join(out, "null_odds.json"),
        )
        result["predictions"][job["name"]] = {"logs": collector.take()}

    flags.FLAGS.verbose_logging = True
    for pred_text, orig_text, do_lower_case in plan.get("final_text", []):
        text = run_squad.get_final_text(pred_text, orig_text, do_lower_case)
        result["final_text"].append([text, collector.take()])

    with open(os.path.join(args.out_dir, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
