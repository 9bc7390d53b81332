"""Stage 6, report: markdown, tables and figures a reader uses without the code."""
