"""What a runner does with its command line before any work: the shared flag groups, the table
of settings that cannot work, the checks of inputs and checkpoints, and TensorFlow's log noise.
Only the runners import it."""
