"""`PretrainingOptions` with the original create_pretraining_data.py's flag defaults.

The product keeps each default once, in its runner's flag definitions; library calls in the
tests name every setting, so the original's defaults (original_release.md §5.1) are spelled out
here as test data.
"""

ORIGINAL_DEFAULTS = dict(
    do_lower_case=True,
    do_whole_word_mask=False,
    max_seq_length=128,
    max_predictions_per_seq=20,
    random_seed=12345,
    dupe_factor=10,
    masked_lm_prob=0.15,
    short_seq_prob=0.1,
)


def pretraining_options(**overrides):
    """`PretrainingOptions` of the original's defaults with `overrides`."""
    from data.pretraining.instances import PretrainingOptions

    return PretrainingOptions(**{**ORIGINAL_DEFAULTS, **overrides})
