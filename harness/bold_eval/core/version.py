"""The bold-eval version, in one place every stage may import (run.json, validation.json, Space cards)."""

__version__ = "0.1.0"
