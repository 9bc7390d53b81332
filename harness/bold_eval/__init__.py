"""bold-eval: the BOLD benchmark (Dhamala et al., FAccT 2021) for Hugging Face models."""

__version__ = "0.1.0"
