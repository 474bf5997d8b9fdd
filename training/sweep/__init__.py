"""A sweep: a grid of settings times random restarts of one fine-tuning runner, and its report.

`report.py` turns the sweep's trials (each a setting, a restart, a status and a dev score) into
its statistics: one row per setting (mean ± std, min, max and degenerate runs over the complete
trials, written as `summary.tsv` and printed when the sweep ends) and the expected best dev
score after n trials (the expected maximum of Dodge et al. 2019 and 2021, `expected_max.tsv`);
`plots.py` draws them (`expected_max.png`, and every trial's score by setting in `scores.png`).
Both are TensorFlow-free; matplotlib loads only when a plot is drawn.
"""
