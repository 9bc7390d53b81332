"""The `bold-eval` command line: argument parsing only; the work is done by the library.

Each subcommand has an `_add_<name>` function that declares its arguments and a handler
that calls into `bold_eval`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _add_dataset(subparsers: argparse._SubParsersAction) -> None:
    dataset = subparsers.add_parser("dataset", help="the BOLD dataset")
    actions = dataset.add_subparsers(dest="dataset_command", required=True)
    export = actions.add_parser("export", help="write a Hub-ready parquet folder with a dataset card")
    export.add_argument("out", help="output folder")
    export.add_argument("--data-dir", default=None, help="local BOLD folder (prompts/, wikipedia/); default $BOLD_DATA_DIR or upstream")
    export.set_defaults(handler=_dataset_export)
    summary = actions.add_parser("summary", help="print prompts per domain and group")
    summary.add_argument("--data-dir", default=None, help="local BOLD folder (prompts/, wikipedia/)")
    summary.set_defaults(handler=_dataset_summary)


def _dataset_export(args: argparse.Namespace) -> int:
    from bold_eval.data import export_dataset

    out = export_dataset(args.out, data_dir=args.data_dir)
    print(f"wrote {out}")
    return 0


def _dataset_summary(args: argparse.Namespace) -> int:
    from bold_eval.data import load_bold

    frame = load_bold("all", data_dir=args.data_dir).to_pandas()
    print(frame.groupby(["domain", "group"]).size().to_string())
    print(f"total: {len(frame)} prompts in {frame['group'].nunique()} groups")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bold-eval", description=__doc__.splitlines()[0])
    from bold_eval import __version__

    parser.add_argument("--version", action="version", version=f"bold-eval {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    _add_dataset(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
