"""TFRecord files: writers (with and without TensorFlow) and the tf.data input pipelines."""
