"""Writes small, learnable pretraining TFRecords in create_pretraining_data's format."""

from benchmarks.tiny_fixtures import write_pretraining_records


def write_records(path, num_examples=256, seq_length=32, max_predictions=5, seed=0):
    """(The one writer: `benchmarks.tiny_fixtures.write_pretraining_records`.) Examples whose A segment repeats one token (so a masked token is a copy of its
    neighbours) and whose B segment repeats it too (IsNext, label 0) or is random (label 1).
    Some examples mask fewer than `max_predictions` tokens, so masked_lm_weights vary."""
    write_pretraining_records(path, num_examples, seq_length, max_predictions, seed)


def records_dataset_fn(data):
    """The Trainer's `dataset_fn` over `data/data.tfrecord` (from `write_records`): batches of
    32, sequence 32, 5 predictions, seed 7."""
    from data.records import input_pipeline

    def dataset_fn(skip, batching):
        files = [str(data / "data.tfrecord")]
        return input_pipeline.pretraining_dataset(
            files, 32, 5, 8, True, seed=7, skip_batches=skip, batching=batching
        )

    return dataset_fn
