"""One model call for the instances of concurrent requests.

Each request thread hands its instances to `Batcher.submit` and waits; one batcher thread takes
the first waiting request and every request that queued meanwhile (those that arrived while the
last batch ran), waits up to `batch_timeout_s` for more while the batch stays within
`max_batch_size` instances, runs `predict` once on all of them and hands each request its own
answers. A request larger than `max_batch_size` runs alone, in calls of `max_batch_size`.

If a batch of several requests fails, each of its requests runs again alone, so that one bad
request cannot fail the others; a failure of a request alone is raised in its thread.
"""

import dataclasses
import queue
import threading
import time

_STOP = object()


@dataclasses.dataclass
class _Request:
    instances: list
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    answers: list | None = None
    error: BaseException | None = None


@dataclasses.dataclass
class BatchStats:
    """What the batcher has done so far: requests answered, instances, and predict calls."""

    requests: int = 0
    instances: int = 0
    batches: int = 0


class Batcher:
    """Runs `predict` on batches of the instances of concurrent `submit` calls.

    Args:
        predict: a function from a list of instances to a list of answers, one each, in order.
        max_batch_size: instances per `predict` call at most.
        batch_timeout_s: how long the first request of a batch waits for others.
    """

    def __init__(self, predict, max_batch_size, batch_timeout_s):
        if max_batch_size < 1 or batch_timeout_s < 0:
            raise ValueError(
                f"max_batch_size must be at least 1 and the batch timeout at least 0, got "
                f"{max_batch_size} and {batch_timeout_s}."
            )
        self._predict = predict
        self.max_batch_size = max_batch_size
        self.batch_timeout_s = batch_timeout_s
        self._queue = queue.Queue()
        self._held = None  # A request that did not fit the last batch: the next one's first.
        self._lock = threading.Lock()
        self._stats = BatchStats()
        self._thread = threading.Thread(target=self._loop, name="batcher", daemon=True)
        self._thread.start()

    def stats(self):
        """A copy of the `BatchStats` so far."""
        with self._lock:
            return dataclasses.replace(self._stats)

    def submit(self, instances):
        """The answers to `instances` (a non-empty list), once a batch including them ran.

        Raises:
            Whatever `predict` raised for these instances run alone.
        """
        request = _Request(list(instances))
        self._queue.put(request)
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.answers

    def close(self):
        """Stops the batcher thread after the requests already submitted."""
        self._queue.put(_STOP)
        self._thread.join()

    def _next(self, timeout, block=True):
        if self._held is not None:
            request, self._held = self._held, None
            return request
        return self._queue.get(block=block, timeout=timeout)

    def _loop(self):
        while True:
            first = self._next(None)
            if first is _STOP:
                return
            batch, size = [first], len(first.instances)
            deadline = time.monotonic() + self.batch_timeout_s
            while size < self.max_batch_size:
                # What queued while the last batch ran joins at once; the timeout is how long
                # to wait beyond that for more.
                remaining = deadline - time.monotonic()
                try:
                    request = self._next(remaining if remaining > 0 else None, remaining > 0)
                except queue.Empty:
                    break
                if request is _STOP or size + len(request.instances) > self.max_batch_size:
                    self._held = request
                    break
                batch.append(request)
                size += len(request.instances)
            self._run(batch)

    def _call(self, instances):
        """`predict` in calls of at most max_batch_size instances."""
        answers = []
        for start in range(0, len(instances), self.max_batch_size):
            chunk = instances[start : start + self.max_batch_size]
            with self._lock:
                self._stats.batches += 1
            got = self._predict(chunk)
            if len(got) != len(chunk):
                raise RuntimeError(f"predict gave {len(got)} answers to {len(chunk)} instances.")
            answers.extend(got)
        return answers

    def _run(self, batch):
        try:
            answers = self._call([x for request in batch for x in request.instances])
        except Exception as err:  # noqa: BLE001 - handed to the requests, never kills the thread
            if len(batch) > 1:
                for request in batch:
                    self._run([request])
                return
            batch[0].error = err
            batch[0].done.set()
            return
        start = 0
        with self._lock:
            self._stats.requests += len(batch)
            self._stats.instances += len(answers)
        for request in batch:
            request.answers = answers[start : start + len(request.instances)]
            start += len(request.instances)
            request.done.set()
