"""Packages the code that create_pretraining_data.py --beam runs on a cluster's workers.

Beam's `--setup_file=./setup.py` (in `--beam_pipeline_options`) builds a source package of the
project's `data` and `fileio` packages from this file and installs it, with the requirements
below, on every worker of Dataflow, Flink or Spark (docs/pretraining_data.md). TensorFlow is
there for paths on `gs://`, `s3://` or `hdfs://`, which the project reads and writes through
`tf.io.gfile`; Beam itself is already on the workers.
"""

import setuptools

setuptools.setup(
    name="bert-pretraining-data",
    version="1.0",
    packages=setuptools.find_packages(include=["data", "data.*", "fileio", "fileio.*"]),
    install_requires=["absl-py>=1.4", "numpy>=1.26", "tensorflow==2.20.*"],
)
