"""A sweep: a grid of settings times random restarts of one fine-tuning runner, and its report.

run_sweep.py's parts, below `jobs/sweep_run.py` and beside `training/` and `serving/`: a sweep
runs the fine-tuning runners as processes of their own and reads what they write, so it
imports `data/` (the dev metrics, the GLUE task names) and `fileio/` only, never the loop,
and loads no TensorFlow.

* `trial.py`: `Trial`, one trial of the sweep (its setting, restart, seed, folder, status and
  dev score), the one type every part passes.
* `settings.py`: `SweepSettings`, run_sweep.py's flags and their defaults.
* `grid.py`: the runner's command line, the grid, trial folders and seeds, checked against the
  runner's own `--helpxml` before any trial starts.
* `study.py`: the Optuna study: enqueuing, claiming, heartbeats, requeuing abandoned trials,
  the pruners.
* `trial_process.py`: one trial's runner process, its dev scores reported for pruning.
* `results.py`: the trials read back from the study, degenerate runs, `sweep_results.json`,
  the best trial and `best/`.
* `report.py`: per-setting statistics (`summary.tsv`) and the expected best dev score after n
  trials (Dodge et al. 2019 and 2021, `expected_max.tsv`); `plots.py` draws them
  (`expected_max.png`, `scores.png`; matplotlib loads only when a plot is drawn).
"""
