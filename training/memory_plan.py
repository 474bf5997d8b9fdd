"""The memory of a training step, estimated before it runs, and the micro-batch that fits a
device: `--num_accumulation_steps=auto` and `--print_memory_plan`.

A step's peak is `fixed + micro_batch * per_example` (`MemoryEstimate`):

* fixed: the weights, their gradients (and the running sum of the micro-batches' gradients
  when accumulating), the optimizer's two slots, the half-precision copies of the weights a
  mixed policy makes, the unscaled and clipped copies of the gradients the update makes, plus
  the runtime itself (TensorFlow's own memory on a CPU);
* per example: the activations the backward pass keeps, counted tensor by tensor for one
  post-LayerNorm encoder layer (`_layer_bytes`: attention probabilities in float32 and in the
  compute dtype, the dropout masks, the LayerNorm inputs in float32, the GELU's inputs ...),
  times the layers, plus the embeddings and the pre-training heads (the masked-LM logits over
  the vocabulary, in float32). With gradient checkpointing only each layer's input stays, plus
  one layer's activations while it is recomputed.

`auto` estimates, it does not probe: the estimate is calibrated against measured peaks
(`CALIBRATION`, from `benchmarks.memory`; its error is in benchmarks/README.md), costs nothing,
gives the same answer on every worker and replica of a run (a probe would measure each device
on its own, and a TPU or multi-worker run must agree on one shape), and needs no out-of-memory
error to recover from: after one, TensorFlow's GPU allocator is not reliably usable in the same
process, and every probed size of a compiled step would compile once (minutes for BERT-large
under XLA). The choice keeps a margin (`SAFETY`) below the memory available.

TensorFlow-free but for `available_memory`, so runners print a plan before TensorFlow loads.
"""

import dataclasses
import math
import os
import subprocess

GIB = 1024**3
# Share of the available memory a plan fills: the rest absorbs the estimate's error
# (benchmarks/README.md) and the allocator's fragmentation.
SAFETY = 0.85
# Bytes per parameter beyond the float32 weights: gradient, clipped/unscaled gradient,
# Adam's (or LAMB's) two slots.
_STATE_BYTES_PER_PARAM = {"float32": 4 + 4 + 4 + 8, "half": 4 + 4 + 4 + 8 + 2}
# Fitted to measured peaks (benchmarks.memory, benchmarks/README.md): the ratio of measured
# to counted activation bytes and the runtime's own memory. CPU: a runner process holds about
# 1.5 GiB before its first step, and a process's resident peak grows by up to twice the
# counted activations on small models (allocator caches), so the CPU plan counts them twice
# (BERT-base/large at 512 then peak 40-50% below the plan, safe but loose). GPU: the counted
# activations and cuBLAS/cuDNN workspaces, not yet measured on a GPU (docs/speed.md).
CALIBRATION = {
    "cpu": {"activations": 2.0, "runtime_bytes": 1.5 * GIB},
    "gpu": {"activations": 1.0, "runtime_bytes": 0.5 * GIB},
}


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """A step's estimated memory: `fixed_bytes + micro_batch * per_example_bytes`.

    Attributes:
        fixed_bytes: everything independent of the batch (runtime, weights, gradients, slots).
        per_example_bytes: the activations of one example kept for the backward pass.
        accumulation_bytes: the running sum of gradients, held when accumulating.
    """

    fixed_bytes: float
    per_example_bytes: float
    accumulation_bytes: float

    def peak(self, micro_batch, accumulating=False):
        """Estimated peak bytes of a step on `micro_batch` examples per replica."""
        extra = self.accumulation_bytes if accumulating else 0.0
        return self.fixed_bytes + extra + micro_batch * self.per_example_bytes


def parameter_count(bert_config, max_predictions_per_seq=0):
    """Trainable parameters of the encoder, plus the pre-training heads when predicting."""
    h, i, n = bert_config.hidden_size, bert_config.intermediate_size, bert_config.num_hidden_layers
    embeddings = (bert_config.vocab_size + bert_config.max_position_embeddings) * h
    embeddings += bert_config.type_vocab_size * h + 2 * h
    layer = 4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h
    pooler = h * h + h
    heads = h * h + 3 * h + bert_config.vocab_size + 2 * h + 2 if max_predictions_per_seq else 0
    return embeddings + n * layer + pooler + heads


def _layer_bytes(bert_config, seq_length, width):
    """Activation bytes one encoder layer keeps per example for its backward pass.

    `width`: bytes of the compute dtype (4 float32, 2 bfloat16/float16). Softmax and the
    LayerNorm statistics run in float32 whatever the policy (`modeling.transformer`).
    """
    s, h, i = seq_length, bert_config.hidden_size, bert_config.intermediate_size
    scores = bert_config.num_attention_heads * s * s
    # Softmax output (float32), its cast, the dropout mask and the dropped probabilities.
    attention = scores * (4 + 3 * width)
    # Layer input, Q, K, V, context, two dense outputs, two dropout masks, two residual sums
    # (the LayerNorms' inputs, taken to float32 with their normalised values).
    hidden = s * h * (9 * width + 2 * 8)
    # Dense output before the GELU, the GELU's tanh and its output (the next dense's input).
    intermediate = s * i * 3 * width
    return attention + hidden + intermediate


def estimate(
    bert_config,
    seq_length,
    precision="float32",
    gradient_checkpointing=False,
    max_predictions_per_seq=0,
    device="gpu",
):
    """The calibrated estimate of one training step's memory on one replica.

    Args:
        bert_config: a `BertConfig`.
        seq_length: tokens per example (--max_seq_length: batches may be cut shorter, the
            plan holds for the longest).
        precision: one of `training.settings.PRECISIONS`.
        gradient_checkpointing: each layer recomputed in the backward pass.
        max_predictions_per_seq: masked-LM positions per example (0: a fine-tuning head).
        device: "gpu" (TensorFlow's device allocator) or "cpu" (the process's memory).

    Returns:
        a `MemoryEstimate`.
    """
    width = 4 if precision == "float32" else 2
    params = parameter_count(bert_config, max_predictions_per_seq)
    calibration = CALIBRATION[device]
    state = _STATE_BYTES_PER_PARAM["float32" if width == 4 else "half"]
    fixed = calibration["runtime_bytes"] + params * (4 + state)
    s, h = seq_length, bert_config.hidden_size
    layer = _layer_bytes(bert_config, s, width)
    if gradient_checkpointing:
        # Each layer's input stays; one layer at a time is recomputed, with its gradients.
        encoder = bert_config.num_hidden_layers * s * h * width + 2 * layer
    else:
        # All layers, plus the gradients of the one the backward pass is in.
        encoder = (bert_config.num_hidden_layers + 1) * layer
    # Embedding sum, its LayerNorm in float32, dropout mask and output.
    embeddings = s * h * (3 * width + 8)
    # Masked-LM transform and logits over the vocabulary: float32 logits, log-softmax and
    # their gradient, and the compute-dtype logits of a mixed policy.
    predictions = max_predictions_per_seq * (
        h * (3 * width + 8) + bert_config.vocab_size * (12 + (width if width == 2 else 0))
    )
    per_example = calibration["activations"] * (encoder + embeddings + predictions)
    return MemoryEstimate(fixed, per_example, accumulation_bytes=4.0 * params)


def largest_micro_batch(memory_estimate, budget_bytes, per_replica_batch):
    """The largest divisor of `per_replica_batch` whose estimated peak fits `budget_bytes`
    (accumulating when below the whole batch); 0 when not even one example fits."""
    for micro in range(per_replica_batch, 0, -1):
        if per_replica_batch % micro:
            continue
        if memory_estimate.peak(micro, micro < per_replica_batch) <= budget_bytes:
            return micro
    return 0


def _gpu_bytes():
    """(GPU total bytes less what other processes use) of the first visible GPU, or None."""
    try:
        total = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split("\n")[0]
        apps = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    used = 0
    for line in apps.splitlines():
        pid, _, mib = line.partition(",")
        # This process's own use is TensorFlow's reservation, which the plan fills.
        if pid.strip().isdigit() and int(pid) != os.getpid():
            used += int(mib.strip() or 0)
    return (int(total.split(",")[1]) - used) * 1024**2


def _cpu_bytes():
    """Memory this process may grow into: MemAvailable plus what it holds already."""
    info = {}
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            info[key] = int(value.split()[0]) * 1024
    with open("/proc/self/status", encoding="ascii") as f:
        rss = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS")), 0)
    return info["MemAvailable"] + rss


def available_memory():
    """("gpu" or "cpu", bytes a step of this process may use on one replica's device)."""
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        free = _gpu_bytes()
        if free is not None:
            return "gpu", free
    return "cpu", _cpu_bytes()


def plan_accumulation(memory_estimate, budget_bytes, train_batch_size, replicas):
    """`--num_accumulation_steps` for `auto`: the fewest micro-batches whose estimated peak
    fits `SAFETY * budget_bytes` (the global batch unchanged).

    Returns:
        (num_accumulation_steps, micro_batch per replica).

    Raises:
        ValueError: not even one example per replica fits, naming the flags that would help.
    """
    per_replica = train_batch_size // replicas
    micro = largest_micro_batch(memory_estimate, SAFETY * budget_bytes, per_replica)
    if micro == 0:
        need = memory_estimate.peak(1, per_replica > 1) / SAFETY / GIB
        raise ValueError(
            f"--num_accumulation_steps=auto: not even one example per replica fits the "
            f"{budget_bytes / GIB:.1f} GiB available (about {need:.1f} GiB needed): use "
            "--gradient_checkpointing, a lower --max_seq_length or a mixed --precision."
        )
    return per_replica // micro, micro


def plan_text(memory_estimate, budgets_gib, train_batch_size, replicas=1):
    """Lines of `--print_memory_plan`: the estimate and, per memory size, the largest
    micro-batch and the `--num_accumulation_steps` it means for `train_batch_size`."""
    lines = [
        f"fixed (runtime, weights, gradients, optimizer slots): "
        f"{memory_estimate.fixed_bytes / GIB:.2f} GiB",
        f"per example (activations): {memory_estimate.per_example_bytes / GIB:.3f} GiB",
        f"memory (GiB) | largest micro-batch | --num_accumulation_steps for "
        f"--train_batch_size={train_batch_size}",
    ]
    per_replica = max(1, train_batch_size // replicas)
    for gib in budgets_gib:
        room = SAFETY * gib * GIB - memory_estimate.fixed_bytes
        largest = max(0, math.floor(room / memory_estimate.per_example_bytes))
        micro = largest_micro_batch(memory_estimate, SAFETY * gib * GIB, per_replica)
        steps = str(per_replica // micro) if micro else "does not fit"
        lines.append(f"{gib:g} | {largest} | {steps}")
    return "\n".join(lines)
