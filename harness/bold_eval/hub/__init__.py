"""Beside the pipeline: publishing to the Hugging Face Hub (dataset repo, metric Spaces, model cards)."""
