"""Fast mode of pretraining-data creation: parallel shards, streamed to disk, flat memory.

The input (all files as one stream, so documents continue across files as in the faithful mode)
is cut at blank lines into shards of about 256 KiB and at least 8 documents. Worker processes
turn each shard into instances with the faithful algorithm of `data.pretraining.instances`
(documents shuffled, every dupe, truncation, random next segments from the same shard,
instances shuffled within the shard) seeded by `(random_seed, shard index)`, choose masked
positions by a partial shuffle (same distribution, a few random draws instead of one per token)
and return framed TFRecords. The parent writes them round-robin in shard order while at most
`num_workers + 1` shards are in flight, so memory does not grow with the corpus and the output
does not depend on the number of workers.

Use it for large corpora: the faithful mode holds every instance (about 200 bytes each, plus 2
bytes per corpus token) until its final shuffle. Use the faithful mode to reproduce the
original's records exactly. The fast mode's records differ (other random draws, pairs and
shuffling only within shards); its statistics do not: masking rate, IsNext share, length
histogram, instances per MB.
"""

import array
import collections
import itertools
import multiprocessing
import random
import re
import time

from absl import logging

from data.pretraining import corpus as corpus_lib
from data.pretraining.example_encoder import ExampleEncoder
from data.pretraining.instances import (
    LOGGED_EXAMPLES,
    InstanceStore,
    create_instances,
    encode_instance,
    example_log_lines,
)
from data.pretraining.masking import sample_masked_lm_predictions
from data.records.tfrecord_writer import AtomicOutputs, frame_records
from fileio.reading import file_size, open_for_reading

# A shard ends at the first blank line after both of these; fixed sizes keep memory flat and
# the output independent of the number of workers. Eight documents or more give the random
# next segments a choice of documents even in corpora of long documents.
_SHARD_BYTES = 1 << 18
_SHARD_DOCUMENTS = 8
# Without such a blank line, a shard is cut at the last blank line (or line end) once it is
# this many times too long.
_FORCED_CUT_FACTOR = 64
PROGRESS_SECONDS = 5.0
# A blank line: only whitespace that `str.strip` removes (carriage returns are dropped anyway).
_BLANK_LINE = re.compile(rb"\n[ \t\r\f\v]*\n")


def shard_sizes():
    """(shard bytes, shard documents): where shards end, as `run` cuts them."""
    return _SHARD_BYTES, _SHARD_DOCUMENTS


def iter_shards(input_files, shard_bytes=_SHARD_BYTES, shard_documents=_SHARD_DOCUMENTS):
    """Yields the concatenated input cut into pieces that end at blank lines.

    Args:
      input_files: Paths, in reading order.
      shard_bytes: A piece ends at the first blank line after at least this many bytes...
      shard_documents: ...and this many blank lines (or, if the input runs on without them,
        at the last blank line or line end once `_FORCED_CUT_FACTOR` times as long).

    Yields:
      `bytes` pieces; a file's last line is ended with "\\n" if it lacks one, so each line
      stays a line, as with `readline`.

    Raises:
      ValueError: If a file cannot be read.
    """
    for data, _ in iter_shard_spans(input_files, shard_bytes, shard_documents):
        yield data


def iter_shard_spans(input_files, shard_bytes=_SHARD_BYTES, shard_documents=_SHARD_DOCUMENTS):
    """Yields each shard of `iter_shards` with where its bytes lie in the input files.

    Yields:
      (shard bytes, spans): `spans` is a tuple of `(path, start, end)`, byte ranges of the
      input files whose concatenation is the shard; `(None, 0, 1)` stands for the "\\n" added
      after a file that does not end with one (see `read_spans`).
    """
    buffer = bytearray()
    spans = collections.deque()  # [path, start, end] of the buffer's bytes, in order
    for path in input_files:
        offset = 0
        try:
            for block in corpus_lib.read_blocks(path):
                buffer += block
                spans.append([path, offset, offset + len(block)])
                offset += len(block)
                while len(buffer) > shard_bytes:
                    cut = _cut(buffer, shard_bytes, shard_documents)
                    if not cut:
                        break
                    yield bytes(buffer[:cut]), _take_spans(spans, cut)
                    del buffer[:cut]
        except OSError as err:
            raise ValueError(f"Cannot read input file {path!r}: {err.strerror}.") from None
        if buffer and not buffer.endswith(b"\n"):
            buffer += b"\n"
            spans.append([None, 0, 1])
    if buffer:
        yield bytes(buffer), _take_spans(spans, len(buffer))


def _take_spans(spans, length):
    """Removes the first `length` bytes' spans from `spans`; returns them as tuples."""
    taken = []
    while length:
        path, start, end = spans[0]
        size = min(length, end - start)
        taken.append((path, start, start + size))
        length -= size
        if start + size == end:
            spans.popleft()
        else:
            spans[0][1] = start + size
    return tuple(taken)


def read_spans(spans):
    """The bytes of a shard from its spans (see `iter_shard_spans`).

    Raises:
      ValueError: If a file cannot be read.
    """
    parts = []
    for path, start, end in spans:
        if path is None:
            parts.append(b"\n")
            continue
        try:
            with open_for_reading(path, binary=True) as reader:
                reader.seek(start)
                parts.append(reader.read(end - start))
        except OSError as err:
            raise ValueError(f"Cannot read input file {path!r}: {err.strerror}.") from None
        if len(parts[-1]) != end - start:
            raise ValueError(
                f"Input file {path!r} changed while it was read (shorter than {end} bytes); "
                "leave the input unchanged until the run ends."
            )
    return b"".join(parts)


def _cut(buffer, shard_bytes, shard_documents):
    """Returns where to end a shard at the start of `buffer`, or 0 to read on."""
    last = None
    for count, match in enumerate(_BLANK_LINE.finditer(buffer), 1):
        if count >= shard_documents and match.end() >= shard_bytes:
            return match.end()
        last = match
    if len(buffer) > _FORCED_CUT_FACTOR * shard_bytes:
        return last.end() if last else buffer.rfind(b"\n") + 1
    return 0


class _EncodingStore(InstanceStore):
    """Also serialises each instance as it is added, while its ids are at hand."""

    def __init__(self, encoder):
        super().__init__()
        self._encoder = encoder
        self.records = []

    def add(self, a_start, a_len, b_start, b_len, is_random_next, tokens, positions, replacements):
        super().add(a_start, a_len, b_start, b_len, is_random_next, tokens, positions, replacements)
        labels = [tokens[p] for p in positions]
        for position, replacement in zip(positions, replacements, strict=True):
            tokens[position] = replacement
        self.records.append(self._encoder.encode(tokens, a_len, positions, labels, is_random_next))


_WORKER = {}


def init_worker(vocab, options):
    _WORKER["vocab"] = vocab
    _WORKER["options"] = options
    _WORKER["tokenizer"] = corpus_lib.LineTokenizer(vocab, options.do_lower_case)
    _WORKER["encoder"] = ExampleEncoder(
        options.max_seq_length, options.max_predictions_per_seq, len(vocab.is_subword)
    )


def process_shard(shard_index, data):
    """Turns one shard of text into framed TFRecords (runs in a worker).

    Args:
      shard_index: Position of the shard in the input; with the seed it fixes the draws.
      data: The shard's bytes.

    Returns:
      (framed records joined, end offset of each, number of documents, log lines of the
      first 20 examples).
    """
    vocab, options = _WORKER["vocab"], _WORKER["options"]
    builder = corpus_lib.CorpusBuilder(_WORKER["tokenizer"], vocab.typecode)
    for line in corpus_lib.iter_lines([data]):
        builder.add_line(line)
    builder.end_document()
    corpus = builder.corpus
    if not corpus.num_documents:
        return b"", array.array("q"), 0, []
    rng = random.Random(f"pretraining shard {options.random_seed} {shard_index}")
    encoder = _WORKER["encoder"]
    store, order = create_instances(
        corpus, options, vocab, rng, sample_masked_lm_predictions, _EncodingStore(encoder)
    )
    records = [store.records[index] for index in order]
    log_lines = []
    for index in order[:LOGGED_EXAMPLES]:
        _, input_ids, positions, label_ids = encode_instance(corpus, store, index, vocab, encoder)
        log_lines.append(
            example_log_lines(
                vocab,
                options,
                input_ids,
                store.a_len[index],
                positions,
                label_ids,
                store.random_next[index],
            )
        )
    framed = frame_records(records)
    # One object per shard (not one per record) keeps the parent's heap from fragmenting.
    return (
        b"".join(framed),
        array.array("q", itertools.accumulate(map(len, framed))),
        corpus.num_documents,
        log_lines,
    )


def _context():
    # Workers inherit the vocabulary by fork; elsewhere they are started afresh.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def run(input_files, output_files, vocab, options, num_workers):
    """Writes pretraining data for `input_files` with `num_workers` processes.

    Args:
      input_files: Paths, in reading order.
      output_files: Output paths; records go to them round-robin.
      vocab: `Vocabulary`.
      options: `PretrainingOptions` (validated).
      num_workers: Number of worker processes (at least 1).

    Returns:
      The number of instances written.

    Raises:
      ValueError: If the input holds no text or an output cannot be written (no output is left
        behind).
    """
    total_bytes = sum(file_size(path) for path in input_files)
    stats = collections.Counter()
    start = last_report = time.monotonic()

    def consume(result, size):
        nonlocal last_report
        blob, ends, num_documents, log_lines = result.get()
        outputs.write_blob(blob, ends)
        for lines in log_lines[: max(0, LOGGED_EXAMPLES - stats["instances"])]:
            for line in lines:
                logging.info("%s", line)
        stats.update(instances=len(ends), documents=num_documents, bytes=size)
        now = time.monotonic()
        if now - last_report >= PROGRESS_SECONDS:
            last_report = now
            log_progress(stats, total_bytes, now - start)

    with AtomicOutputs(output_files) as outputs:
        logging.info("*** Writing to output files ***")
        for path in output_files:
            logging.info("  %s", path)
        with _context().Pool(num_workers, init_worker, (vocab, options)) as pool:
            pending = collections.deque()
            shards = iter_shards(input_files, _SHARD_BYTES, _SHARD_DOCUMENTS)
            for shard_index, data in enumerate(shards):
                pending.append((pool.apply_async(process_shard, (shard_index, data)), len(data)))
                if len(pending) > num_workers:
                    consume(*pending.popleft())
            while pending:
                consume(*pending.popleft())
        if not stats["documents"]:
            raise no_text_error(input_files)
        log_totals(stats, time.monotonic() - start)
    logging.info("Wrote %d total instances", stats["instances"])
    return stats["instances"]


def no_text_error(input_files):
    """The error for input files without a document."""
    return ValueError(
        f"The input files {', '.join(input_files)} hold no text. Write one sentence per "
        "line and a blank line between documents."
    )


def log_progress(stats, total_bytes, elapsed):
    """Logs the progress line: `stats` counts bytes, documents and instances done so far."""
    rate = stats["bytes"] / max(elapsed, 1e-9)
    logging.info(
        "Read %.1f of %.1f MB (%.2f MB/s, ETA %.0f s): %d documents, %d instances",
        stats["bytes"] / 1e6, total_bytes / 1e6, rate / 1e6,
        (total_bytes - stats["bytes"]) / max(rate, 1e-9), stats["documents"], stats["instances"],
    )  # fmt: skip


def log_totals(stats, elapsed):
    """Logs the final statistics line of a run."""
    logging.info(
        "Read %.1f MB in %.1f s (%.2f MB/s): %d documents, %d instances",
        stats["bytes"] / 1e6, elapsed, stats["bytes"] / 1e6 / max(elapsed, 1e-9),
        stats["documents"], stats["instances"],
    )  # fmt: skip
