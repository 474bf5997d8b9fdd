"""How a run lays out its batches, decided once from the strategy, the task and the settings.

The Trainer and extract_features ask `plan_batches` / `inference_plan` and hand the `Batching`
options it gives to the input pipelines (`data.records.batching`):

- **cut to length**: each batch runs at its longest real sequence, rounded up to a length
  bucket, unless `--pad_to_max_seq_length`, a TPU (whose compiled steps need one static
  length) or a task whose loss or outputs read padding positions asks for the full length;
- **real tokens only**: training batches that are cut also name their real tokens, so the
  encoder's token-wise parts run on those alone (`modeling.transformer.RealTokens`);
- **whole batches**: evaluation and prediction pad their last batch to a whole one on a TPU
  and on several workers, where every replica must run one static shape.
"""

import dataclasses

from data.records.batching import FINE_BUCKET_WIDTH, Batching
from training.distributed_input import batches_cut_to_length, pad_to_whole_batches

# Prediction sorts examples by length within windows of this many batches: long enough to
# group similar lengths, short enough that memory stays flat on large files.
SORT_WINDOW_BATCHES = 64
# --group_by_length sorts training examples within windows of this many batches (as Hugging
# Face's length-grouped sampler): similar lengths per batch, yet every batch drawn from a
# stretch of the shuffled stream.
GROUP_WINDOW_BATCHES = 50
# XLA training steps run the encoder on a multiple of this many token slots per example: at
# most max_seq_length / 16 token counts to compile, as many as cut lengths.
XLA_TOKEN_SLOTS = 16


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    """The batch layout of one run.

    Attributes:
        cut_to_length: batches cut to their longest sequence (a length bucket).
        real_tokens_only: training batches name their real tokens (only where cut).
        whole_inference_batches: evaluation and prediction batches padded to one shape.
        compiled: the steps compile with XLA (coarser buckets, static token slots).
        accumulation_steps: micro-batches per update.
        group_by_length: training batches of similar lengths (`--group_by_length`).
        seed: the seed of the length groups' order.
        per_token_features: the task's per-token features cut with the inputs (NER's
            `label_ids`).
    """

    cut_to_length: bool
    real_tokens_only: bool
    whole_inference_batches: bool
    compiled: bool = False
    accumulation_steps: int = 1
    group_by_length: bool = False
    seed: int = 0
    per_token_features: tuple = ()

    @property
    def micro_batch_width(self):
        """The length step of length-sorted micro-batches; None for consecutive slices.

        Not under XLA: there the whole step compiles as one program, and micro-batches of
        varying shape, compiled one by one, trained slower than it (BERT-Mini, 2-core CPU).
        """
        if not self.cut_to_length or self.accumulation_steps == 1 or self.compiled:
            return None
        return FINE_BUCKET_WIDTH

    @property
    def token_slots(self):
        """Token slots per example of a training batch: the real tokens exactly (1) or, for
        XLA's static shapes, 16 per example; 0 where micro-batches name their own, or none.
        Evaluation's sorted batches keep little padding once cut: packing them measured 15%
        slower."""
        if not self.real_tokens_only or self.accumulation_steps > 1:
            return 0
        return XLA_TOKEN_SLOTS if self.compiled else 1

    @property
    def micro_batch_token_slots(self):
        """1 where each length-sorted micro-batch names its own real tokens, else 0."""
        return 1 if self.real_tokens_only and self.micro_batch_width is not None else 0

    def training(self):
        """`Batching` of the training stream."""
        return Batching(
            cut_to_length=self.cut_to_length,
            fine_buckets=not self.compiled,
            group_batches=GROUP_WINDOW_BATCHES if self.group_by_length else 0,
            group_seed=self.seed,
            token_slots=self.token_slots,
            per_token_features=self.per_token_features,
        )

    def evaluation(self):
        """`Batching` of a metrics pass over whole batches."""
        return Batching(
            cut_to_length=self.cut_to_length,
            fine_buckets=not self.compiled,
            per_token_features=self.per_token_features,
        )

    def prediction(self):
        """`Batching` of a prediction pass: similar lengths batched together where cut (the
        outputs come back in input order), the last batch whole where needed."""
        return Batching(
            pad_to_whole_batches=self.whole_inference_batches,
            cut_to_length=self.cut_to_length,
            fine_buckets=not self.compiled,
            sort_batches=SORT_WINDOW_BATCHES if self.cut_to_length else 0,
            per_token_features=self.per_token_features,
        )


def plan_batches(strategy, task, config):
    """The batch layout of a Trainer's run.

    Args:
        strategy: a `tf.distribute.Strategy` (a TPU keeps the full length and whole batches).
        task: a `training.tasks.Task` (its `cuts_to_length`, `real_tokens_only` and
            `per_token_features`).
        config: a `TrainConfig`.

    Raises:
        ValueError: `--pad_to_whole_batches=false` where the strategy needs static shapes.
    """
    cut = task.cuts_to_length and batches_cut_to_length(strategy, config.pad_to_max_seq_length)
    return BatchPlan(
        cut_to_length=cut,
        real_tokens_only=cut and task.real_tokens_only,
        whole_inference_batches=pad_to_whole_batches(strategy, config.pad_to_whole_batches),
        compiled=config.use_xla,
        accumulation_steps=config.num_accumulation_steps,
        group_by_length=config.group_by_length,
        seed=config.data_seed,
        per_token_features=task.per_token_features,
    )


def inference_plan(strategy, pad_to_max_seq_length, jit_compile):
    """The batch layout of extract_features: cut and sorted unless padding is asked for."""
    return BatchPlan(
        cut_to_length=batches_cut_to_length(strategy, pad_to_max_seq_length),
        real_tokens_only=False,
        whole_inference_batches=False,
        compiled=jit_compile,
    )
