"""create_pretraining_data.py's library: text files in, masked-LM/NSP TFRecords out.

The faithful mode reproduces the original `create_pretraining_data.py` on Python 3: the same
documents, one `random.Random(random_seed)` drawn in the same order (original_release.md §5.3,
§5.4), so the TFRecords hold the same examples in the same order and files. Every instance is
held until the original's final shuffle. Records are serialised deterministically, so files are
byte-reproducible. The fast mode (`num_workers` > 0, `data.pretraining.fast`) streams parallel
shards with flat memory: the same statistics, other records; `beam` runs the fast mode's work
as an Apache Beam pipeline, with the fast mode's files.

Example:
  options = PretrainingOptions(max_seq_length=128, max_predictions_per_seq=20, dupe_factor=5)
  create_pretraining_data("corpus/*.txt", "out.tfrecord", "vocab.txt", options)
"""

import random

from absl import logging

from data.pretraining import corpus as corpus_lib
from data.pretraining import fast
from data.pretraining.example_encoder import ExampleEncoder
from data.pretraining.instances import (
    LOGGED_EXAMPLES,
    create_instances,
    encode_instance,
    example_log_lines,
)
from data.records.tfrecord_writer import AtomicOutputs, frame_records
from fileio.errors import UserError
from fileio.patterns import expand_file_patterns

# Records encoded per write call.
_WRITE_BATCH = 512


def write_instances(corpus, store, instance_order, vocab, options, outputs):
    """Writes instances in `instance_order` round-robin to `outputs`, logging the first 20.

    Returns:
      The number of records written.
    """
    encoder = ExampleEncoder(
        options.max_seq_length, options.max_predictions_per_seq, len(vocab.is_subword)
    )
    batch = []
    for count, index in enumerate(instance_order):
        record, input_ids, positions, label_ids = encode_instance(
            corpus, store, index, vocab, encoder
        )
        batch.append(record)
        if count < LOGGED_EXAMPLES:
            for line in example_log_lines(
                vocab, options, input_ids, store.a_len[index], positions, label_ids,
                store.random_next[index],
            ):  # fmt: skip
                logging.info("%s", line)
        if len(batch) == _WRITE_BATCH:
            outputs.write_framed(frame_records(batch))
            batch = []
    outputs.write_framed(frame_records(batch))
    return len(instance_order)


def output_file_names(output_file, output_shards=0):
    """The output files: `output_file`'s comma-separated paths, or with `output_shards` N > 0
    the N files `<output_file>-00000-of-0000N` ..., Beam's and TFDS's names of shards.

    Raises:
      ValueError: If no file is named, or a prefix is not one path.
    """
    if output_shards < 0:
        raise ValueError(f"--output_shards must be 0 or more, got {output_shards}.")
    output_files = [path for path in (output_file or "").split(",") if path]
    if not output_files:
        raise ValueError("--output_file names no file; pass one or more comma-separated paths.")
    if not output_shards:
        return output_files
    if len(output_files) > 1:
        raise ValueError(
            f"--output_shards={output_shards} takes one --output_file prefix, got "
            f"{len(output_files)} paths; pass one prefix, e.g. gs://bucket/data/train.tfrecord."
        )
    return [f"{output_files[0]}-{i:05d}-of-{output_shards:05d}" for i in range(output_shards)]


def create_pretraining_data(
    input_file,
    output_file,
    vocab_file,
    options,
    num_workers=0,
    beam=False,
    beam_pipeline_options="",
    output_shards=0,
):
    """Turns text files into MLM/NSP TFRecords, as `create_pretraining_data.py` does.

    Args:
      input_file: Comma-separated input files or glob patterns (one sentence per line, blank
        line between documents).
      output_file: Comma-separated output files; instances go to them round-robin.
      vocab_file: vocab.txt of the model.
      options: `PretrainingOptions`.
      num_workers: 0 for the faithful mode; N > 0 for the parallel streaming mode of
        `data.pretraining.fast` (same statistics, different records).
      beam: Run the fast mode's work as an Apache Beam pipeline
        (`data.pretraining.beam_pipeline`): the fast mode's files, on any runner.
      beam_pipeline_options: Beam's own options (e.g. "--runner=DataflowRunner ..."); without
        a runner, Beam's in-process runner, with `num_workers` processes if above 1.
      output_shards: 0: `output_file` lists the outputs; N > 0: `output_file` is one prefix
        and the outputs are `<prefix>-00000-of-0000N` ... (`output_file_names`).

    Returns:
      The number of instances written.

    Raises:
      ValueError: On bad settings or input; no output file is left behind then.
    """
    options.validate()
    if num_workers < 0:
        raise ValueError(f"--num_workers must be 0 (faithful mode) or more, got {num_workers}.")
    output_files = output_file_names(output_file, output_shards)
    vocab = corpus_lib.Vocabulary(vocab_file)
    # In the original's order: the faithful mode reads documents as it did. The other modes
    # sort each pattern's matches, so a glob gives the same records on every file system.
    faithful = num_workers == 0 and not beam
    input_files = expand_file_patterns(input_file, as_original=faithful)
    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
    if beam:
        try:
            from data.pretraining import beam_pipeline  # Apache Beam is an optional dependency
        except ModuleNotFoundError as err:
            if err.name != "apache_beam":
                raise
            raise UserError(
                "--beam needs Apache Beam, which this Python does not have: make an environment "
                "for it (python -m venv .venv-beam && .venv-beam/bin/pip install -r "
                "requirements-beam.txt -c constraints-beam.txt) and run the command with "
                ".venv-beam/bin/python."
            ) from None

        return beam_pipeline.run(
            input_files, output_files, vocab, options, num_workers, beam_pipeline_options
        )
    if num_workers > 0:
        return fast.run(input_files, output_files, vocab, options, num_workers)
    with AtomicOutputs(output_files) as outputs:
        tokenizer = corpus_lib.LineTokenizer(vocab, options.do_lower_case)
        corpus = corpus_lib.read_corpus(input_files, tokenizer, vocab.typecode)
        rng = random.Random(options.random_seed)
        store, instance_order = create_instances(corpus, options, vocab, rng)
        logging.info("*** Writing to output files ***")
        for path in output_files:
            logging.info("  %s", path)
        total = write_instances(corpus, store, instance_order, vocab, options, outputs)
    logging.info("Wrote %d total instances", total)
    return total
