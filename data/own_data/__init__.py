"""Fine-tuning data of the user's own: CSV, TSV and JSON Lines files (file_processor.py),
their labels (labels.py), and DataProcessor files written for the original (processor_file.py)."""
