"""Stage 5, analysis: from per-text scores to the paper's tables, tests and findings."""
