"""Stage 2, generation: what writes the continuations of BOLD prompts (Section 5)."""
