"""Runs create_pretraining_data's Beam pipeline for the tests, in the interpreter that has Beam.

    <beam python> -m tests.helpers.beam_run jobs.json

`jobs.json` holds a list of jobs, each the library call's arguments (`input_file`,
`output_file`, `vocab_file`, `options`: the `PretrainingOptions` fields, `num_workers`,
`beam_pipeline_options`) plus `shard_bytes` (the fast mode's shard size, small for tiny corpora)
`reverse_listing`, to have the file system list a glob's files in reverse order, and
`fail_once`: a directory, to make the Process and Write steps raise once each (after part
of their work), as a worker that fails and whose bundle the runner retries. Each job's number of
instances, or its error, is printed as a JSON line.

TensorFlow-free: the interpreter with Beam need not have it.
"""

import glob
import json
import os
import sys

from absl import logging

from data.pretraining import beam_pipeline, fast
from data.pretraining.create import create_pretraining_data
from data.pretraining.instances import PretrainingOptions


def _once(directory, name):
    """True the first time it is called with `name` (across processes), False afterwards."""
    try:
        os.close(os.open(os.path.join(directory, name), os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def _fail_once(directory):
    process, write = beam_pipeline._ProcessShard.process, beam_pipeline._WriteOutput.process

    def failing_process(self, element):
        yield from process(self, element)
        if element[0] == 1 and _once(directory, "process"):
            raise RuntimeError("a worker fails once after processing shard 1")

    def failing_write(self, element):
        yield from write(self, element)
        if _once(directory, "write"):
            raise RuntimeError("a worker fails once after writing a file")

    beam_pipeline._ProcessShard.process = failing_process
    beam_pipeline._WriteOutput.process = failing_write


def _reversed(listing):
    def reversed_listing(pattern, *args, **kwargs):
        return sorted(listing(pattern, *args, **kwargs), reverse=True)

    return reversed_listing


def main(path):
    listed = glob.glob
    logging.set_verbosity(logging.INFO)
    fast.PROGRESS_SECONDS = 0.0  # a progress line after every shard
    with open(path, encoding="utf-8") as reader:
        jobs = json.load(reader)
    for job in jobs:
        glob.glob = listed
        fast._SHARD_BYTES = job.pop("shard_bytes")
        if job.get("fail_once"):
            _fail_once(job.pop("fail_once"))
        if job.pop("reverse_listing", False):
            glob.glob = _reversed(listed)
        job["options"] = PretrainingOptions(**job["options"])
        try:
            total = create_pretraining_data(**job, beam=True)
            print(json.dumps({"total": total}), flush=True)
        except ValueError as err:
            print(json.dumps({"error": str(err)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
