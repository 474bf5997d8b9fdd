"""create_pretraining_data.py --beam: the fast mode's work as an Apache Beam pipeline.

The output files are byte-identical to the fast mode's (`data.pretraining.fast`) for the same
input, flags and seed, on any runner and any number of workers:

1. Plan: one worker reads the input files in order and cuts them into the fast mode's shards
   (`fast.iter_shard_spans`, shards may span files), emitting each as byte ranges of the files,
   not as text. This is the pipeline's one sequential step (about 100 MB/s of reading).
2. Process: each shard is read back from its ranges and turned into framed TFRecords by the
   fast mode's own `fast.process_shard`, seeded by (random_seed, shard index) as there.
3. Deal: the instances per shard give each shard's first record number (a side input); each
   shard's records go round-robin to the output files from there, exactly as the fast mode's
   writer deals them, as (output file, (shard index, bytes)).
4. Write: each output file's pieces, in shard order, are written whole to a temporary name fixed
   for the run beside the output: a retried write rewrites the file rather than adding to it.
   This step holds one output file's records in memory: give large corpora many output files.
5. Finalize: once every file is written, one step renames them into place, so a failed run
   leaves no output (the driver deletes the temporary files) and a retried one no duplicates.

Beam's own file sinks are not used: they choose each record's file and order themselves, which
would give other files on every run.
"""

import collections
import json
import os
import re
import shlex
import time
import uuid

import apache_beam as beam
from absl import logging
from apache_beam.metrics.metric import Metrics, MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState

from data.pretraining import fast
from data.pretraining.instances import LOGGED_EXAMPLES
from data.records.tfrecord_writer import open_for_writing
from fileio.atomic import exists, move_file, remove_file, write_atomically
from fileio.errors import UserError
from fileio.reading import file_size, is_dir, is_remote, open_for_reading

# Beam's in-process runner; Beam's default local runner (Prism) downloads a program first.
LOCAL_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
_NAMESPACE = "create_pretraining_data"
_COUNTERS = ("bytes", "documents", "instances")
_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The message of a project error inside the text of a runner's failure, without the step's name
# that Beam adds.
_ERROR_LINE = re.compile(r"(?:ValueError|UserError): (.+?)(?: \[while running '[^']*'\])*$", re.M)


def pipeline_arguments(pipeline_options, num_workers):
    """Beam's command line: `pipeline_options` (a string of flags) after the local defaults.

    Without `--runner`, the in-process runner runs the pipeline, in `num_workers` processes
    when that is above 1.
    """
    arguments = shlex.split(pipeline_options or "")
    if any(re.match(r"--runner(=|$)", argument) for argument in arguments):
        return arguments
    local = [f"--runner={LOCAL_RUNNER}"]
    if num_workers > 1:
        local += ["--direct_running_mode=multi_processing", f"--direct_num_workers={num_workers}"]
    else:
        local += ["--direct_running_mode=in_memory"]
    return local + arguments


def _plan(_, input_files, shard_bytes, shard_documents):
    """Yields (shard index, (byte ranges, size)) for the fast mode's shards of the input."""
    shards = fast.iter_shard_spans(input_files, shard_bytes, shard_documents)
    for index, (data, spans) in enumerate(shards):
        yield index, (spans, len(data))


class _ProcessShard(beam.DoFn):
    """Reads a shard from its byte ranges and runs the fast mode's `process_shard` on it."""

    def __init__(self, vocab, options, total_bytes):
        self._vocab, self._options, self._total_bytes = vocab, options, total_bytes
        self._counters = {name: Metrics.counter(_NAMESPACE, name) for name in _COUNTERS}

    def setup(self):
        fast.init_worker(self._vocab, self._options)
        self._stats = collections.Counter()
        self._start = self._last_report = time.monotonic()

    def process(self, element):
        index, (spans, size) = element
        blob, ends, num_documents, log_lines = fast.process_shard(index, fast.read_spans(spans))
        done = dict(bytes=size, documents=num_documents, instances=len(ends))
        for name, value in done.items():
            self._counters[name].inc(value)
        self._stats.update(done)
        now = time.monotonic()
        if now - self._last_report >= fast.PROGRESS_SECONDS:
            # This worker's share: with several workers, each reports its own.
            self._last_report = now
            fast.log_progress(self._stats, self._total_bytes, now - self._start)
        yield index, (blob, list(ends), num_documents, log_lines, size)


def _layout(counts):
    """Each shard's first record number, and the totals, from (index, instances, documents,
    bytes) of every shard."""
    offsets, totals = {}, dict.fromkeys(_COUNTERS, 0)
    for index, instances, documents, size in sorted(counts):
        offsets[index] = totals["instances"]
        totals["instances"] += instances
        totals["documents"] += documents
        totals["bytes"] += size
    return {"offsets": offsets, **totals}


def _deal(result, layout, num_outputs):
    """Yields (output index, (shard index, framed records)) as the fast mode's writer deals."""
    index, (blob, ends, _, log_lines, _) = result
    first = layout["offsets"][index]
    for lines in log_lines[: max(0, LOGGED_EXAMPLES - first)]:
        for line in lines:
            logging.info("%s", line)
    if not ends:
        return
    view, starts = memoryview(blob), [0, *ends[:-1]]
    for output in range(num_outputs):
        # Record i of the shard is record first + i of the run, which goes to output
        # (first + i) % num_outputs.
        skip = (output - first) % num_outputs
        pairs = zip(starts[skip::num_outputs], ends[skip::num_outputs], strict=True)
        piece = b"".join(view[start:end] for start, end in pairs)
        if piece:
            yield output, (index, piece)


def temporary_paths(output_files, run_id):
    """The temporary file beside each output for the run `run_id` (fixed for the run), and
    last, beside the first output, the file of the run's totals."""
    paths = []
    for path in [*output_files, os.path.join(os.path.dirname(output_files[0]), "totals.json")]:
        directory, name = os.path.split(path)
        paths.append(os.path.join(directory, f".tmp-beam-{run_id}-{name}"))
    return paths


class _WriteOutput(beam.DoFn):
    """Writes one output file's pieces in shard order to its temporary path."""

    def __init__(self, output_files, temporary):
        self._output_files, self._temporary = output_files, temporary

    def process(self, element):
        output, pieces = element
        path = self._temporary[output]
        try:
            # "wb": a retried bundle rewrites the file from its start.
            with open_for_writing(path) as writer:
                for _, piece in sorted(pieces, key=lambda item: item[0]):
                    writer.write(piece)
        except OSError as err:
            raise ValueError(
                f"Cannot write output file {self._output_files[output]!r}: {err}. Check the "
                "space and permissions there."
            ) from err
        yield output


def _finalize(_, written, layout, input_files, output_files, temporary):
    """Renames every temporary file into place once all are written (outputs without a record
    are written empty, as in the fast mode)."""
    if not layout["documents"]:
        raise fast.no_text_error(input_files)
    written = set(written)
    for output, (path, temp) in enumerate(zip(output_files, temporary[:-1], strict=True)):
        if output not in written:
            write_atomically(path, b"")
        elif exists(temp):
            move_file(temp, path)
        # else: an earlier attempt of this step moved it already.
    # For the driver's final lines: counters may count a retried bundle twice, and some runners
    # report no metrics at all; a retried attempt of this step writes the same file.
    with open_for_writing(temporary[-1]) as writer:
        writer.write(json.dumps({name: layout[name] for name in _COUNTERS}).encode("utf-8"))
    yield len(output_files)


def build(pipeline, input_files, output_files, vocab, options, temporary, total_bytes):
    """Adds the pipeline's steps (see the module's docstring) to `pipeline`."""
    num_outputs = len(output_files)
    results = (
        pipeline
        | "Start" >> beam.Create([None])
        # The shard sizes as this process sees them, for the worker that makes the plan.
        | "Plan" >> beam.FlatMap(_plan, input_files, *fast.shard_sizes())
        | "Spread" >> beam.Reshuffle()
        | "Process" >> beam.ParDo(_ProcessShard(vocab, options, total_bytes))
    )
    layout = beam.pvalue.AsSingleton(
        results
        | "Count" >> beam.Map(lambda r: (r[0], len(r[1][1]), r[1][2], r[1][4]))
        | "Gather" >> beam.combiners.ToList()
        | "Layout" >> beam.Map(_layout)
    )
    written = (
        results
        | "Deal" >> beam.FlatMap(_deal, layout, num_outputs)
        | "Group" >> beam.GroupByKey()
        | "Write" >> beam.ParDo(_WriteOutput(output_files, temporary))
    )
    return (
        pipeline
        | "Once" >> beam.Create([None])
        | "Finalize"
        >> beam.FlatMap(
            _finalize,
            beam.pvalue.AsList(written),
            layout,
            input_files,
            output_files,
            temporary,
        )
    )


def _check_outputs(output_files):
    for path in output_files:
        if is_dir(path):
            raise ValueError(f"Output file {path!r} is a directory; name a file instead.")
        directory = os.path.dirname(path) or "."
        if not is_remote(path) and not (os.path.isdir(directory) and os.access(directory, os.W_OK)):
            raise ValueError(
                f"Cannot write output file {path!r}: its directory is missing or not writable. "
                "Create its directory or choose a writable location."
            )


def _counters(result):
    """This pipeline's counters so far, or None where the runner does not report them."""
    totals = dict.fromkeys(_COUNTERS, 0)
    try:
        found = result.metrics().query(MetricsFilter().with_namespace(_NAMESPACE))["counters"]
    except (NotImplementedError, AttributeError, KeyError):
        return None
    for metric in found:
        name = metric.key.metric.name
        value = metric.committed if metric.committed is not None else metric.attempted
        if name in totals and value is not None:
            totals[name] += value
    return totals if found else None


def _wait(result, total_bytes, start):
    """Waits for the run, logging progress where the runner reports counters while it runs."""
    while not PipelineState.is_terminal(result.state):
        try:
            result.wait_until_finish(duration=int(fast.PROGRESS_SECONDS * 1000))
        except NotImplementedError:  # runners that can only wait to the end
            result.wait_until_finish()
        stats = None if PipelineState.is_terminal(result.state) else _counters(result)
        if stats:
            fast.log_progress(stats, total_bytes, time.monotonic() - start)
    if result.state != PipelineState.DONE:
        raise UserError(
            f"The Beam pipeline ended in state {result.state}: see the runner's log for the "
            "failing step, fix it and run the command again."
        )


def _user_error(err):
    """The project's error for a pipeline failure: the message a step raised, if there is one."""
    text = f"ValueError: {err}" if isinstance(err, ValueError) else str(err)
    messages = _ERROR_LINE.findall(text)
    return UserError(messages[-1]) if messages else None


def run(input_files, output_files, vocab, options, num_workers, pipeline_options):
    """Writes the fast mode's files for `input_files` with a Beam pipeline.

    Args:
      input_files: Paths, in reading order (sorted by the caller).
      output_files: Output paths; records go to them round-robin.
      vocab: `Vocabulary`.
      options: `PretrainingOptions` (validated).
      num_workers: Processes of the local runner (1 or less: one, in this process).
      pipeline_options: Beam's options as one string, e.g. "--runner=DataflowRunner
        --project=... --region=... --temp_location=gs://...".

    Returns:
      The number of instances written.

    Raises:
      ValueError: On bad input or a failed run; no output file is left behind then.
    """
    _check_outputs(output_files)
    arguments = pipeline_arguments(pipeline_options, num_workers)
    logging.info("Beam pipeline options: %s", " ".join(arguments))
    if any("multi_processing" in argument for argument in arguments):
        # The local runner's worker processes import this project's modules.
        paths = [_PROJECT_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    total_bytes = sum(file_size(path) for path in input_files)
    temporary = temporary_paths(output_files, uuid.uuid4().hex[:12])
    logging.info("*** Writing to output files ***")
    for path in output_files:
        logging.info("  %s", path)
    start = time.monotonic()
    try:
        pipeline = beam.Pipeline(options=PipelineOptions(arguments))
        build(pipeline, input_files, output_files, vocab, options, temporary, total_bytes)
        result = pipeline.run()
        _wait(result, total_bytes, start)
    except Exception as err:  # noqa: BLE001 - a step's error is re-raised as the project's
        for temp in temporary:
            remove_file(temp)
        error = _user_error(err)
        if error is None:
            raise
        raise error from err
    try:
        with open_for_reading(temporary[-1]) as reader:
            stats = json.loads(reader.read())
    finally:
        remove_file(temporary[-1])
    fast.log_totals(stats, time.monotonic() - start)
    logging.info("Wrote %d total instances", stats["instances"])
    return stats["instances"]
