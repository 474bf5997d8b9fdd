"""The weights an export reads and their strict load into the export's model."""

import contextlib
import dataclasses
import os

from data.tokenization.full_tokenizer import load_vocab
from modeling import tf1_checkpoint
from modeling.layers import weights_from_checkpoint
from training.precision import compute_policy

# Which runner writes checkpoints that each export reads, for error messages.
_TRAINED_BY = {
    "classifier": "run_classifier.py (an output_dir of a fine-tuning run)",
    "encoder": "Google's bert_model.ckpt, run_pretraining.py or any fine-tuning run",
    "pretraining": "Google's bert_model.ckpt or run_pretraining.py",
    "ner": "run_ner.py (an output_dir of a fine-tuning run)",
    "squad": "run_squad.py (an output_dir of a fine-tuning run)",
}


@dataclasses.dataclass
class Weights:
    """The weights an export reads.

    Attributes:
        arrays: dict original name -> np.ndarray.
        source: what messages call them (the checkpoint's path).
        folder: the folder of the run that wrote them (its labels.txt, problem.json, SQuAD
            threshold and flags.txt); None for weights held in memory.
    """

    arrays: dict
    source: str
    folder: str | None

    @classmethod
    def from_checkpoint(cls, checkpoint):
        """Reads a checkpoint (a prefix, or a folder with a `checkpoint` index) whole."""
        prefix = tf1_checkpoint.resolve_checkpoint_path(checkpoint)
        return cls(tf1_checkpoint.read_checkpoint(prefix), prefix, os.path.dirname(prefix))


def check_vocab(vocab_file, vocab_size):
    """Refuses a vocabulary with more tokens than the model's embedding table has rows."""
    # A token id past the embedding table reads garbage on accelerators instead of failing.
    tokens = len(load_vocab(vocab_file))
    if tokens > vocab_size:
        raise ValueError(
            f"--vocab_file {vocab_file} has {tokens} tokens but the model's vocab_size is "
            f"{vocab_size} (--bert_config_file): pass the vocab.txt the model was trained with."
        )


@contextlib.contextmanager
def assigning(precision):
    """The block that builds an export's model and loads its weights.

    The `--precision` flag's policy, not whatever a training run in this process left behind;
    weights stay float32 under every policy. Each task's load is strict, so no variable needs
    its random draw.
    """
    with compute_policy(precision), weights_from_checkpoint():
        yield


def load(task, variable_map, weights, advice=None):
    """Assigns every variable of the export from the weights, or says what does not fit.

    Args:
        task: the --task exported.
        variable_map: original name -> variable of the export's model.
        weights: `Weights`.
        advice: the error's last sentence, where the caller knows better than the default
            (which blames --bert_config_file and names the runner that writes such checkpoints).

    Raises:
        ValueError: every missing, unexpected or misshapen array, in one message.
    """
    problems = tf1_checkpoint.array_mismatches(variable_map, weights.arrays)
    if problems:
        advice = advice or (
            f"{tf1_checkpoint.CONFIG_ADVICE}\n--task={task} reads a checkpoint written by "
            f"{_TRAINED_BY[task]}; pass --checkpoint of such a run (and its --bert_config_file "
            "and --task_name)."
        )
        raise tf1_checkpoint.mismatch_error(weights.source, problems, advice)
    tf1_checkpoint.assign_arrays(variable_map, weights.arrays, weights.source)
