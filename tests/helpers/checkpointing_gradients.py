"""Loss and gradients of one training step with and without gradient checkpointing, through
the Trainer's own step (accumulation, loss scaling, cross-replica sum), on 2 logical CPUs.

    python -m tests.helpers.checkpointing_gradients --data F --out_dir D --result R.npz

For each case (one device, mirrored on 2 replicas, XLA, accumulation 2, float16 loss
scaling) it saves `<case>/<with|without>/loss` and `.../g<i>` (the unscaled summed gradients
before clipping), both passes starting from the same weights and dropout generator states.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CASES = {
    "one_device": dict(strategy="one_device"),
    "mirrored": dict(strategy="mirrored"),
    "xla": dict(strategy="one_device", use_xla=True),
    "accumulation_2": dict(strategy="one_device", num_accumulation_steps=2),
    "float16": dict(strategy="one_device", precision="mixed_float16"),
}


def _step(trainer, batch, gradient_checkpointing):
    """(loss, gradients) of the Trainer's step on `batch`, without the update."""
    import tensorflow as tf

    trainer.model.bert.gradient_checkpointing = gradient_checkpointing
    loss_and_grads = trainer._micro_loss_and_grads
    if trainer.config.use_xla:
        loss_and_grads = tf.function(loss_and_grads, jit_compile=True)
    # The step up to the update: its summed, unscaled gradients come back instead.
    trainer._clip_and_apply = lambda loss, grads: (loss, trainer.loss_scale.unscale(grads))

    @tf.function
    def run(batch):
        out = trainer.strategy.run(
            lambda f: trainer._replica_step(f, loss_and_grads), args=(batch,)
        )
        return trainer.strategy.experimental_local_results(out)[0]

    loss, grads = run(batch)
    return float(loss), [g.numpy() for g in grads]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--result", required=True)
    args = parser.parse_args()

    import keras
    import numpy as np

    from data.records import input_pipeline
    from tests.helpers.tiny_config import tiny_config, tiny_train_config
    from training.distributed_input import whole_batches
    from training.loop import Trainer
    from training.strategy import create_strategy
    from training.tasks import PretrainingTask

    # Mirrored first: its logical CPU devices must exist before TensorFlow starts.
    strategies = {"mirrored": create_strategy("mirrored", num_cpu_devices=2)}
    strategies["one_device"] = create_strategy("one_device")
    config = tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    results = {}
    for case, settings in CASES.items():
        keras.utils.set_random_seed(1)
        settings = dict(settings)
        strategy = strategies[settings.pop("strategy")]
        train_config = tiny_train_config(
            os.path.join(args.out_dir, case), train_batch_size=8, **settings
        )
        trainer = Trainer(PretrainingTask(config), strategy, train_config)
        batch = next(
            whole_batches(
                strategy,
                lambda batching: input_pipeline.pretraining_dataset(
                    [args.data], 32, 5, 8, True, seed=7, batching=batching
                ),
                is_training=True,
                options=trainer.plan.training(),
            )
        )
        seeds = [v for v in trainer.model.non_trainable_variables if "seed_generator" in v.path]
        start = [v.numpy() for v in seeds]
        for name, on in (("without", False), ("with", True)):
            for v, value in zip(seeds, start, strict=True):
                v.assign(value)
            loss, grads = _step(trainer, batch, on)
            results[f"{case}/{name}/loss"] = loss
            results.update({f"{case}/{name}/g{i}": g for i, g in enumerate(grads)})
        results[f"{case}/replicas"] = strategy.num_replicas_in_sync
        # The mask generators moved: dropout was drawn.
        results[f"{case}/seeds_moved"] = any(
            (v.numpy() != s).any() for v, s in zip(seeds, start, strict=True)
        )
        keras.mixed_precision.set_global_policy("float32")
    np.savez(args.result, **results)


if __name__ == "__main__":
    main()
