"""Stage 4, scoring: texts in, one row of per-text scores per text out."""
