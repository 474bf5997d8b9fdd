"""Masked-LM / next-sentence pretraining data: corpus reading, instances, masking, writing."""
