"""The bold-eval version and the versions of the packages that shape a run's numbers (run.json, Space cards)."""

import platform

__version__ = "0.1.0"


def versions() -> dict[str, str]:
    """Versions of the packages that shape the results."""
    import importlib.metadata

    found = {"python": platform.python_version()}
    for name in ("bold-eval", "torch", "transformers", "accelerate", "datasets", "tokenizers", "numpy", "pandas"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found
