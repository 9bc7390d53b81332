"""Tiny models and local servers for tests and benchmarks; no stage imports this package."""
