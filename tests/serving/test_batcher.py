"""serving/batcher.py without a model: concurrent requests share `predict` calls and each gets
its own answers, in order."""

import threading

from serving.batcher import Batcher


def test_concurrent_requests_each_get_their_own_answers_from_shared_calls():
    calls = []

    def predict(instances):
        calls.append(list(instances))
        return [f"answer to {x}" for x in instances]

    # A long batch timeout: the first request waits for the others, so they share a call.
    batcher = Batcher(predict, max_batch_size=64, batch_timeout_s=2.0)
    requests = [[f"r{i}.{j}" for j in range(i + 1)] for i in range(5)]
    answers = [None] * len(requests)

    def send(index):
        answers[index] = batcher.submit(requests[index])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    batcher.close()
    assert answers == [[f"answer to {x}" for x in request] for request in requests]
    assert len(calls) < len(requests), calls
    stats = batcher.stats()
    assert (stats.requests, stats.instances, stats.batches) == (5, 15, len(calls))
