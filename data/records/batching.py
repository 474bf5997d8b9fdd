"""From a stream of parsed examples to the batches one input pipeline feeds its replicas.

The readers (`data.records.input_pipeline`) define the global stream of examples and cut it
into global batches. A `Batching` then says what this pipeline yields of each:

* **Slices.** With several pipelines (one per worker or TPU host) and replicas, each pipeline
  keeps its contiguous slice of every global batch, one batch per replica it feeds, so the
  replicas of a step together see exactly the global batch one device would.
* **Length buckets.** BERT's outputs at real positions do not depend on trailing padding (the
  attention mask gives it exactly zero weight), so a batch can be cut to its longest real
  sequence. The cut is rounded up to a bucket: a multiple of `bucket_width` (at most 8 lengths
  per `max_seq_length`) where every length is compiled anew (XLA), else a multiple of 8 (one
  trace with the length left open serves every length; 8 keeps the matrix dimensions aligned).
  It is taken over the whole global batch, so every replica of a step has the same shape. The
  records stay in the original fixed length.
* **Token slots** (training): each replica's batch gets `token_positions` `[T]`, the flat
  positions (`example * length + position`) of its real tokens in order, then `examples *
  length` (a slot past the end) up to T, a multiple of `token_slots` per example, the same for
  every replica of a step, so the encoder can skip the padding inside a batch too. With
  `token_slots` 1, T is about the number of real tokens; where every shape is compiled anew
  (XLA), 16 lets T take at most `max_seq_length / 16` values.
* **Sorting** (evaluation and prediction): examples sorted by length within windows of
  `sort_batches` batches, so batches hold similar lengths; each example carries its index in the
  stream (`example_index`) for the outputs to be put back in order.
* **Padding to whole batches**: the last batch of a finite set filled with copies of its first
  example marked `is_real_example` = 0 (the original's `PaddingInputExample`), for the static
  batch shapes a TPU needs.
* **Grouping by length** (training, opt-in): the stream cut into windows of `group_batches`
  global batches, each window sorted by length and cut into batches, whose order within the
  window is shuffled by a seed and the window's index. Batches then hold similar lengths, so
  the cut to a bucket removes most of the padding; this changes which examples share a batch
  (not which are read, nor the number of steps), so training no longer follows the original.
"""

import dataclasses

import tensorflow as tf

# At most this many bucket lengths per max_seq_length: few enough compiled shapes, fine enough
# steps (16 tokens at max_seq_length 128).
_MAX_BUCKETS = 8
# The step between fine buckets (see `Batching.fine_buckets`).
FINE_BUCKET_WIDTH = 8
# Feature names the cut always applies to; a task names its own per-token features besides
# (`Batching.per_token_features`), since a shape alone cannot tell a per-token `label_ids` from
# a multi-hot one whose number of labels happens to equal the sequence length.
_TOKEN_FEATURES = ("input_ids", "input_mask", "segment_ids")


@dataclasses.dataclass(frozen=True)
class Batching:
    """What one input pipeline yields of each global batch, and how.

    Attributes:
        num_pipelines: input pipelines of the whole cluster (one per worker or TPU host).
        pipeline_index: this pipeline, in `[0, num_pipelines)`.
        replicas: replicas this pipeline feeds. With one pipeline and one replica the
            pipeline yields whole global batches; otherwise per-replica batches of
            `batch_size / (num_pipelines * replicas)` examples, `replicas` of them per step.
        pad_to_whole_batches: fill the last batch of a finite set to a whole one (padding
            examples have `is_real_example` 0).
        cut_to_length: cut each global batch to its longest real sequence, rounded up to a
            bucket length.
        fine_buckets: buckets every 8 tokens instead of at most 8 per max_seq_length (for
            steps that are not compiled per shape).
        sort_batches: sort examples by length within windows of this many batches and add
            `example_index` (0: keep the order).
        background: parse and prefetch on tf.data threads (False: on the consumer's thread).
        group_batches: training: group examples by length within windows of this many
            global batches (0: keep the stream's batches).
        group_seed: seed of the batch order within each window.
        token_slots: add `token_positions` with a multiple of this many slots per example
            (0: none); needs `cut_to_length`.
        per_token_features: the task's features with one value per token besides the
            inputs (NER's `label_ids`), cut with them.
    """

    num_pipelines: int = 1
    pipeline_index: int = 0
    replicas: int = 1
    pad_to_whole_batches: bool = False
    cut_to_length: bool = False
    fine_buckets: bool = False
    sort_batches: int = 0
    background: bool = True
    group_batches: int = 0
    group_seed: int = 0
    token_slots: int = 0
    per_token_features: tuple = ()

    @property
    def splits(self):
        """Parts each global batch is cut into (one per replica of the cluster)."""
        return self.num_pipelines * self.replicas

    def local(self):
        """The same batching for a pipeline that reads a stream of its own (file sharding)."""
        return dataclasses.replace(self, num_pipelines=1, pipeline_index=0)

    def check_batch_size(self, batch_size, flag="batch size"):
        """Returns the per-replica batch; ValueError unless it splits evenly."""
        if batch_size % self.splits:
            raise ValueError(
                f"The {flag} {batch_size} is not divisible by the number of replicas "
                f"({self.splits}); pass a multiple of {self.splits}."
            )
        return batch_size // self.splits


def bucket_width(max_seq_length):
    """The step between bucket lengths: a multiple of 8, at most `_MAX_BUCKETS` buckets."""
    step = -(-max_seq_length // _MAX_BUCKETS)
    return max(8, -(-step // 8) * 8)


def bucket_lengths(max_seq_length):
    """Every length a trimmed batch can have, ascending (the last is `max_seq_length`)."""
    width = bucket_width(max_seq_length)
    return sorted({min(n, max_seq_length) for n in range(width, max_seq_length + width, width)})


def _lengths(batch):
    return tf.reduce_sum(tf.cast(batch["input_mask"] > 0, tf.int32), axis=-1)


def _trim(batch, fine=False, per_token_features=()):
    """Cuts the token features of a global batch to its bucket length."""
    full = batch["input_ids"].shape[1]
    width = FINE_BUCKET_WIDTH if fine else bucket_width(full)
    return _cut_to(batch, width, full, per_token_features)


def _cut_to(batch, width, limit, per_token_features=()):
    """Cuts the token features of `batch` (the inputs and `per_token_features`) to its
    longest real sequence rounded up to a multiple of `width`, at most `limit` (a tensor where
    the length is not static)."""
    full = batch["input_ids"].shape[1]
    longest = tf.reduce_max(_lengths(batch))
    # An all-padding batch keeps one bucket rather than no position.
    cut = tf.minimum(tf.maximum(-(-longest // width), 1) * width, limit)
    names = set(_TOKEN_FEATURES) | set(per_token_features)
    return {
        name: value[:, :cut]
        if name in names and value.shape.rank == 2 and value.shape[1] == full
        else value
        for name, value in batch.items()
    }


def _token_positions(input_mask, splits, slots_per_example):
    """`token_positions` `[splits, T]` of each of the `splits` parts of a batch (see the
    module docstring)."""
    shape = tf.shape(input_mask)
    per_split = tf.reshape(input_mask > 0, [splits, -1])
    past_end = tf.shape(per_split)[1]
    counts = tf.reduce_sum(tf.cast(per_split, tf.int32), axis=1)
    step = slots_per_example * (shape[0] // splits)
    slots = tf.maximum(-(-tf.reduce_max(counts) // step), 1) * step
    # Real positions first, in order; then the slot past the end.
    order = tf.argsort(tf.cast(~per_split, tf.int32), axis=1, stable=True)
    order = tf.where(tf.range(past_end) < counts[:, tf.newaxis], order, past_end)
    filler = tf.fill([splits, tf.maximum(slots - past_end, 0)], past_end)
    return tf.concat([order, filler], axis=1)[:, :slots]


def _with_token_positions(batch, batching):
    # [splits, T], one row per replica (split off with the replica's examples), or [T].
    positions = _token_positions(batch["input_mask"], batching.splits, batching.token_slots)
    return {**batch, "token_positions": positions[0] if batching.splits == 1 else positions}


def micro_batches(batch, parts, width=None, token_slots=0, per_token_features=()):
    """One replica's batch as `parts` micro-batches of one update.

    With a `width`, the micro-batches take the examples in order of length and each is cut to
    its own longest sequence rounded up to a multiple of `width`: the same examples in the
    same update, so the same summed gradient up to float rounding, with less padding when
    lengths vary (the shapes vary: not for TPUs). Without, they are consecutive slices of the
    batch.

    Args:
        batch: feature dict of `[B, ...]` tensors, `B` a multiple of `parts`.
        parts: the number of micro-batches.
        width: the step between micro-batch lengths, or None.
        token_slots: with `width`, add each micro-batch's `token_positions` (see the module
            docstring) with a multiple of this many slots per example (0: none).
        per_token_features: with `width`, the task's per-token features cut with the inputs
            (`Batching.per_token_features`).

    Returns:
        `part(i)` -> the feature dict of micro-batch `i` (a scalar tensor index),
        `[B / parts, ...]`; with `width`, token features `[B / parts, L_i]`.
    """
    if width is not None:
        batch = _sorted_by_length(batch)
    split = {name: tf.reshape(value, [parts, -1, *_rest(value)]) for name, value in batch.items()}
    if width is None:
        return lambda i: {name: value[i] for name, value in split.items()}
    limit = tf.shape(batch["input_ids"])[1]

    def part(i):
        micro = _cut_to(
            {name: value[i] for name, value in split.items()}, width, limit, per_token_features
        )
        if token_slots:
            micro["token_positions"] = _token_positions(micro["input_mask"], 1, token_slots)[0]
        return micro

    return part


def _pad_to(batch_size):
    def pad(batch):
        count = tf.shape(batch["input_ids"])[0]
        missing = batch_size - count
        first = tf.zeros([missing], tf.int32)
        padded = {}
        for name, value in batch.items():
            filling = tf.gather(value, first)
            # Static batch dimension, as a TPU needs.
            padded[name] = tf.ensure_shape(
                tf.concat([value, filling], 0), [batch_size, *value.shape[1:]]
            )
        real = tf.concat([tf.ones([count], tf.int32), tf.zeros([missing], tf.int32)], 0)
        if "is_real_example" in batch:
            real *= tf.cast(tf.reshape(padded["is_real_example"], [batch_size]), tf.int32)
        padded["is_real_example"] = tf.reshape(real, [batch_size])
        return padded

    return pad


def _sorted_by_length(batch):
    order = tf.argsort(_lengths(batch), stable=True)
    return {name: tf.gather(value, order) for name, value in batch.items()}


def _grouped_by_length(ds, batch_size, batching, skip_batches):
    """Whole windows of the stream -> batches of similar lengths (see the module docstring).

    `ds` yields windows of `group_batches * batch_size` examples, the first of them window
    number `skip_batches // group_batches` of the stream; the first `skip_batches %
    group_batches` batches are dropped, so a resumed run continues where it stopped.
    """
    count = batching.group_batches
    first_window = skip_batches // count

    def regroup(index, window):
        window = _sorted_by_length(window)
        # [count * B, ...] -> [count, B, ...], the batches in an order drawn for this window.
        order = tf.random.experimental.stateless_shuffle(
            tf.range(count), seed=[batching.group_seed, first_window + index]
        )
        return {
            name: tf.gather(tf.reshape(value, [count, batch_size, *_rest(value)]), order)
            for name, value in window.items()
        }

    ds = plain_map(ds.enumerate(), lambda i, w: regroup(tf.cast(i, tf.int32), w)).unbatch()
    return ds.skip(skip_batches % count)


def plain_map(ds, fn, **kwargs):
    """`ds.map(fn, **kwargs)` with `fn` traced as written, not converted by autograph.

    The pipeline's functions branch and loop on Python values only (shapes, flags, feature
    names), so autograph would change nothing in them; converting them cost about 0.15 s per
    pipeline built (extract_features' sorted, cut pipeline: 0.25 -> 0.10 s).
    """
    return ds.map(tf.autograph.experimental.do_not_convert(fn), **kwargs)


def _cast_ints(batch):
    # TPUs only take int32; the files hold int64.
    return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in batch.items()}


def batch_examples(batches, batch_size, drop_remainder, batching, skip_batches=0):
    """Parsed batches of the global stream -> this pipeline's batches.

    Args:
        batches: a `tf.data.Dataset` of feature dicts, each a batch of consecutive examples
            of the global stream (any size when `batching.sort_batches`; whole windows of
            `batching.group_batches` global batches when grouping; else `batch_size`).
        batch_size: the global batch size.
        drop_remainder: the stream only has whole batches (training).
        batching: a `Batching`.
        skip_batches: with `group_batches`, the global batches of the stream already
            trained on; the stream must start at the window that holds the next one.

    Returns:
        A `tf.data.Dataset` of feature dicts: global batches, or per-replica batches when
        `batching` splits them; int64 features as int32.
    """
    ds = plain_map(batches, _cast_ints)
    if batching.group_batches:
        ds = _grouped_by_length(ds, batch_size, batching, skip_batches)
    if batching.sort_batches:
        ds = plain_map(
            ds.unbatch().enumerate(),
            lambda i, x: {**x, "example_index": tf.cast(i, tf.int32)},
        )
        window = batching.sort_batches * batch_size
        ds = plain_map(ds.batch(window), _sorted_by_length).unbatch()
        ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    if batching.pad_to_whole_batches:
        ds = plain_map(ds, _pad_to(batch_size))
    elif batching.splits > 1 and not drop_remainder:
        raise ValueError(
            "Several replicas need whole batches: use drop_remainder or pad_to_whole_batches."
        )
    if batching.cut_to_length:
        ds = plain_map(
            ds, lambda batch: _trim(batch, batching.fine_buckets, batching.per_token_features)
        )
        if batching.token_slots:
            ds = plain_map(ds, lambda batch: _with_token_positions(batch, batching))
    if batching.splits == 1:
        return ds
    per_replica = batching.check_batch_size(batch_size)
    first = batching.pipeline_index * batching.replicas

    def own_slice(batch):
        # [B, ...] -> [splits, b, ...]: row k is replica k's part; this pipeline keeps its rows.
        return {
            name: (
                value
                if name == "token_positions"
                else tf.reshape(value, [batching.splits, per_replica, *_rest(value)])
            )[first : first + batching.replicas]
            for name, value in batch.items()
        }

    return plain_map(ds, own_slice).unbatch()


def _rest(value):
    """The non-batch dimensions of `value`, static where known."""
    dynamic = tf.shape(value)[1:]
    return [d if d is not None else dynamic[i] for i, d in enumerate(value.shape[1:])]
