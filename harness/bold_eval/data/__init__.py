"""Stage 1, the dataset: loading and exporting BOLD, anonymization (Section 3.3)."""
