"""Trains the tiny model in mixed_float16 on one device and on two mirrored CPU replicas, the
loss scale doubling after every finite step so that steps are skipped, and saves both runs.

    python -m tests.helpers.train_float16_replicas --data F --out_dir D --result R.npz

Its own process: the two logical CPU devices must exist before TensorFlow starts.
"""

import argparse
import functools
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--result", required=True)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()

    import keras
    import numpy as np

    from data.records import input_pipeline
    from tests.helpers.tiny_config import tiny_config, tiny_train_config
    from training import loop
    from training.precision import DynamicLossScale
    from training.strategy import create_strategy
    from training.tasks import PretrainingTask

    # The mirrored strategy first: it splits the CPU before anything else initialises it.
    strategies = {
        "mirrored": create_strategy("mirrored", num_cpu_devices=2),
        "one_device": create_strategy("one_device"),
    }
    loop.DynamicLossScale = functools.partial(DynamicLossScale, growth_interval=1)
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    result = {}
    for name, strategy in strategies.items():
        keras.utils.set_random_seed(1)
        train_config = tiny_train_config(
            os.path.join(args.out_dir, name), precision="mixed_float16", num_train_steps=args.steps
        )
        trainer = loop.Trainer(PretrainingTask(config), strategy, train_config)
        losses = trainer.train(
            lambda skip, batching: input_pipeline.pretraining_dataset(
                [args.data], 32, 5, 8, True, seed=7, skip_batches=skip, batching=batching
            )
        )
        result[f"{name}/replicas"] = strategy.num_replicas_in_sync
        result[f"{name}/losses"] = np.array([loss for _, loss in losses])
        result[f"{name}/iterations"] = int(trainer.optimizer.iterations.numpy())
        result[f"{name}/scale"] = float(trainer.loss_scale.value.numpy())
        for var_name, var in trainer.task.variable_map().items():
            result[f"{name}/w/{var_name}"] = var.numpy()
        # The largest difference between the replicas' copies of any training state.
        state = [*trainer.model.variables, *trainer.optimizer.variables]
        state = [getattr(v, "value", v) for v in state]
        state += [trainer.loss_scale.value, trainer.loss_scale.good_steps]
        copies = [strategy.experimental_local_results(v) for v in state]
        result[f"{name}/replica_gap"] = max(
            float(np.abs(np.asarray(c, np.float64) - np.asarray(cs[0], np.float64)).max())
            for cs in copies
            for c in cs
        )
    np.savez(args.result, **result)


if __name__ == "__main__":
    main()
