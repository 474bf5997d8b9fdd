"""Fine-tuning data of the user's own: processors for files that are not a GLUE task's."""
