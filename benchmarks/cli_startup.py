"""How long `bold-eval --version` and `--help` take, against the Python interpreter starting and doing nothing.

The parser reads its choices and defaults from `bold_eval.core.options` only, so these commands load no numpy,
pandas, scipy, statsmodels or torch (tests/project/test_imports.py checks that). The second baseline imports
what a parser would need if it read its constants from the analysis, metric and generation modules themselves.

    .venv/bin/python benchmarks/cli_startup.py [--rounds 7]

Prints the median wall time of each command over the rounds (taken in turn, so that a busy moment hits them
alike) and its ratio to the bare interpreter.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "bold-eval --version": [sys.executable, "-m", "bold_eval.cli", "--version"],
    "bold-eval --help": [sys.executable, "-m", "bold_eval.cli", "--help"],
    "bold-eval run --help": [sys.executable, "-m", "bold_eval.cli", "run", "--help"],
    "the analysis, metric and generation imports": [
        sys.executable, "-c",
        "import bold_eval.analysis.clustered, bold_eval.metrics.registry, bold_eval.metrics, "
        "bold_eval.generation.decoding, bold_eval.generation.gibbs, bold_eval.generation.openai_compatible, "
        "bold_eval.validation.sheng2019, bold_eval.hub.model_card; bold_eval.metrics.metric_names()"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.rounds):
        for name, command in COMMANDS.items():
            started = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - started)
    baseline = statistics.median(times["python -c pass (baseline)"])
    print(f"{'command':<40} {'median s':>9} {'x python start':>15}   ({args.rounds} rounds)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<40} {median:>9.3f} {median / baseline:>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
