"""One run function per job, each called by its runner with plain settings objects:
pre-training, the fine-tuning runs (classifier, NER, SQuAD), feature extraction and export.
They build on the shared loop and its parts in `training/`."""
