"""Runs the shared Trainer on tiny pretraining data and saves losses and final weights.

    python -m tests.helpers.train_tiny --data F --out_dir D --strategy mirrored \
        --num_cpu_devices 2 --batch 8 --steps 10 --accumulation 1 --result R.npz
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--result", required=True)
    parser.add_argument("--strategy", default="one_device")
    parser.add_argument("--num_cpu_devices", type=int, default=1)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--accumulation", type=int, default=1)
    parser.add_argument("--save_every", type=int, default=1000)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--xla", action="store_true")
    parser.add_argument("--eval_steps", type=int, default=0, help="Evaluate after training.")
    args = parser.parse_args()

    import keras
    import numpy as np
    import tensorflow as tf

    from data.records import input_pipeline
    from tests.helpers.tiny_config import tiny_config, tiny_train_config
    from training.distributed_input import input_in_background
    from training.loop import Trainer
    from training.strategy import create_strategy
    from training.tasks import PretrainingTask

    if args.deterministic:
        tf.config.experimental.enable_op_determinism()
    strategy = create_strategy(args.strategy, num_cpu_devices=args.num_cpu_devices)
    keras.utils.set_random_seed(1)
    config = tiny_config(
        hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout
    )
    train_config = tiny_train_config(
        args.out_dir,
        num_train_steps=args.steps,
        train_batch_size=args.batch,
        save_checkpoints_steps=args.save_every,
        num_accumulation_steps=args.accumulation,
        use_xla=args.xla,
    )
    trainer = Trainer(PretrainingTask(config), strategy, train_config)
    start = trainer.step
    initial = {n: v.numpy() for n, v in trainer.task.variable_map().items()}
    losses = trainer.train(
        lambda skip, batching: input_pipeline.pretraining_dataset(
            [args.data], 32, 5, args.batch, True, seed=7, skip_batches=skip, batching=batching
        )
    )
    weights = {n: v.numpy() for n, v in trainer.task.variable_map().items()}
    # As run_pretraining: eval input on background threads unless one CPU replica.
    background = input_in_background(strategy)
    evaluation = {}
    if args.eval_steps:
        evaluation = trainer.evaluate(
            lambda batching: input_pipeline.pretraining_dataset(
                [args.data], 32, 5, args.batch, False, batching=batching
            ),
            args.eval_steps,
        )
    np.savez(
        args.result,
        start_step=start,
        replicas=strategy.num_replicas_in_sync,
        background=background,
        **{"eval/" + k: v for k, v in evaluation.items()},
        losses=np.array([loss for _, loss in losses]),
        **{"w/" + n: v for n, v in weights.items()},
        **{"init/" + n: v for n, v in initial.items()},
    )


if __name__ == "__main__":
    main()
