"""The `keras-gauss` command line.

Each subcommand lives with the code it drives and registers itself here with
an `add_parser(subparsers)` function; heavy imports (TensorFlow) happen only
when a subcommand runs, so `keras-gauss --help` is instant.
"""

import argparse
import importlib
import os
import sys

# module path of each subcommand's `add_parser`, in the order `--help` shows
SUBCOMMANDS = [
    "keras_gauss.hierarchy.cli",
    "keras_gauss.pipelines.cli",
    "keras_gauss.export.cli",
]


class CommandError(Exception):
    """A user-facing error: printed as `keras-gauss: error: ...`, exit 2."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-gauss",
        description=(
            "Gaussian embeddings (Vilnis & McCallum, ICLR 2015) with Keras 3: "
            "train on WordNet hierarchies or text corpora, evaluate, export."
        ),
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {_version()}"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        importlib.import_module(module).add_parser(subparsers)
    return parser


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keras-gauss")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "unknown"


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.handler(args) or 0
    except CommandError as error:
        parser.exit(2, f"keras-gauss {args.command}: error: {error}\n")
    except KeyboardInterrupt:  # pragma: no cover - interactive
        parser.exit(130, "interrupted\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
