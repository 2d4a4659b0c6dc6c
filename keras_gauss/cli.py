"""The `keras-gauss` command line.

Each subcommand lives with the code it drives and registers itself here with
an `add_parser(subparsers)` function. Building the parser imports neither
TensorFlow, Keras nor NLTK (a subcommand imports them when it runs), so
`keras-gauss --help` and every subcommand's `--help` answer at once;
`tests/keras_gauss/test_cli.py` checks it. The console script
(`keras-gauss`, `python -m keras_gauss`) is `command`.
"""

import argparse
import importlib
import os
import sys
import warnings

# module path of each subcommand's `add_parser`, in the order `--help` shows
SUBCOMMANDS = [
    "keras_gauss.hierarchy.cli",
    "keras_gauss.pipelines.cli",
    "keras_gauss.export.cli",
    "keras_gauss.history",
]

BACKEND_MISSING = (
    "keras-gauss needs TensorFlow, which is not installed. Install it with the "
    "extra that fits your machine: `pip install keras-gauss[cpu]` (CPU-only "
    "wheel) or `pip install keras-gauss[gpu]`."
)


class _Version(argparse.Action):
    """`--version`, reading the installed version only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest=dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(0, f"{parser.prog} {_version()}\n")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-gauss",
        description=(
            "Gaussian embeddings (Vilnis & McCallum, ICLR 2015) with Keras 3: "
            "train on WordNet hierarchies or text corpora, evaluate, export."
        ),
        epilog=None if _backend_installed() else f"note: {BACKEND_MISSING}",
    )
    parser.add_argument("--version", action=_Version,
                        help="show the installed version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        importlib.import_module(module).add_parser(subparsers)
    for subparser in subparsers.choices.values():
        subparser.add_argument(
            "-q", "--quiet", action="store_true",
            help="no progress bar or step lines; print only the result")
    return parser


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keras-gauss")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "unknown"


def _backend_installed():
    """Whether TensorFlow can be found, without importing it."""
    from importlib.util import find_spec

    try:
        return find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def _missing_backend(error):
    """Whether `error` (or what caused it) is TensorFlow or Keras failing to import."""
    while error is not None:
        if isinstance(error, ImportError):
            name = (error.name or "").split(".")[0]
            if name in ("tensorflow", "keras") or "keras-gauss[cpu]" in str(error):
                return True
        error = error.__cause__ or error.__context__
    return False


def quiet_backend_logs(environ=os.environ):
    """Silences TensorFlow's start-up notices for the command, however it is
    started (`keras-gauss`, `python -m keras_gauss`, `keras_gauss.cli.main()`),
    so an error is one line. TF 2.21 prints a oneDNN notice (twice) on some
    CPUs that no log level hides; oneDNN's rewrites do not touch our gather,
    scatter and element-wise ops. Values the user set are kept."""
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def _one_line_warning(message, category, filename, lineno, line=None):
    """A warning of a command, as `warnings.formatwarning`: one line,
    `keras-gauss: warning: ...` (not Python's `file.py:N: RuntimeWarning:`
    and source line), on a line of its own."""
    from keras_gauss.callbacks.progress import Phase

    Phase.break_line()
    return "keras-gauss: warning: " + " ".join(str(message).split()) + "\n"


def _private_matplotlib_config():
    """Matplotlib (imported by Keras) writes two lines when it cannot write
    its config directory (a read-only home): give it a temporary one of
    this process's own instead (`MPLCONFIGDIR`, unless set)."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    import atexit
    import shutil
    import tempfile

    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    existing = os.path.abspath(os.path.join(base, "matplotlib"))
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".keras-gauss-probe-", dir=existing))
        return  # writable: matplotlib makes its directory there
    except OSError:
        pass
    try:
        directory = tempfile.mkdtemp(prefix="keras-gauss-matplotlib-")
    except OSError:
        return
    atexit.register(shutil.rmtree, directory, True)
    os.environ["MPLCONFIGDIR"] = directory


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, `timeout`, a batch system's stop), raised in the main
    thread as Ctrl-C's `KeyboardInterrupt` is: the command stops the same
    way (its temporary files removed, its last checkpoint kept) and says so
    in one line, exit status 143."""


def _raise_terminated(signum, frame):
    raise Terminated()


def _on_sigterm():
    """Installs `_raise_terminated` for SIGTERM; returns the handler it
    replaced (None when it cannot: not the main thread, or no SIGTERM)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "SIGTERM") or signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        return None
    return signal.signal(signal.SIGTERM, _raise_terminated)


def _interrupted(args, word="interrupted"):
    """The line of a command stopped by Ctrl-C (or SIGTERM: `word`
    "terminated"): with how to resume a training command whose run
    directory holds a checkpoint."""
    from keras_gauss.checkpoint import resume_command

    run_dir = getattr(args, "resume", None) or getattr(args, "out", None)
    command = None
    if "resume" in vars(args) and run_dir is not None:
        try:
            command = resume_command(run_dir)
        except OSError:  # (unreadable: no advice)
            pass
    if command is None:
        return word
    return (f"{word}; the latest checkpoint is in {run_dir}: continue with "
            f"`{command}` and the same settings")


def _ctrl_c(error):
    """The `KeyboardInterrupt` behind an `ImportError`, or None: Ctrl-C while
    a compiled module initialises (TensorFlow's, numpy's) comes out of the
    import as an `ImportError` caused by it (pybind11's "initialization
    failed"), which would otherwise read as TensorFlow not installed."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            return error
        error = error.__cause__ or error.__context__
    return None


def _run(args):
    """Runs the subcommand; Ctrl-C that an import turned into an ImportError
    is Ctrl-C again."""
    try:
        return args.handler(args) or 0
    except ImportError as error:
        stop = _ctrl_c(error)
        if stop is None:
            raise
        raise stop from None


def main(argv=None):
    # Loading the command (numpy, the subcommands' modules: a third of a
    # second) is inside main, so that Ctrl-C then is one line, not a traceback
    # of the import under way.
    try:
        quiet_backend_logs()
        from keras_gauss import distribution
        from keras_gauss.callbacks.progress import BestEffortStream
        from keras_gauss.callbacks.progress import Phase
        from keras_gauss.checks import CommandError

        parser = build_parser()
        args = parser.parse_args(argv)
    except (KeyboardInterrupt, ImportError) as error:
        if isinstance(error, ImportError) and _ctrl_c(error) is None:
            raise
        sys.stderr.write("keras-gauss: interrupted\n")
        return 130
    if args.command is None:
        parser.print_help()
        return 0

    # A multi-process job's other processes hear of this one's error, and
    # its watchdog's line (another process ended) starts as ours.
    distribution.set_error_prefix(f"keras-gauss {args.command}: error: ")
    # What the command prints is best-effort: a closed pipe or a full disk
    # on stdout is one warning line, never the end of the job.
    stdout = sys.stdout
    if not isinstance(stdout, BestEffortStream):
        sys.stdout = BestEffortStream(stdout)
    formatwarning, warnings.formatwarning = warnings.formatwarning, _one_line_warning
    _private_matplotlib_config()
    sigterm = _on_sigterm()
    try:
        return _run(args)
    except CommandError as error:
        Phase.break_line()
        distribution.job_failed(str(error))
        parser.exit(2, f"keras-gauss {args.command}: error: {error}\n")
    except ImportError as error:
        if not _missing_backend(error):
            raise
        Phase.break_line()
        parser.exit(2, f"keras-gauss {args.command}: error: {BACKEND_MISSING}\n")
    except KeyboardInterrupt as error:  # Ctrl-C, or SIGTERM (Terminated)
        Phase.break_line()
        word, code = ("terminated", 143) if isinstance(error, Terminated) else (
            "interrupted", 130)
        distribution.job_failed(word, code)
        parser.exit(code, f"{_interrupted(args, word)}\n")
    except Exception as error:
        distribution.job_crashed(error)  # a peer's end: its one line, not a traceback
        raise
    finally:
        if sigterm is not None:
            import signal

            signal.signal(signal.SIGTERM, sigterm)
        warnings.formatwarning = formatwarning
        if isinstance(sys.stdout, BestEffortStream) and sys.stdout.stream is stdout:
            try:
                sys.stdout.flush()
            finally:
                sys.stdout = stdout


def command(argv=None):
    """The `keras-gauss` console script (and `python -m keras_gauss`): `main`,
    then the exit with its code; after a command that returned (not one that
    failed), the process ends without Python's teardown of its modules (1.3 s
    after a TensorFlow job's last line): every `atexit` function runs and the
    output is flushed first (`keras_gauss.fast_exit`). Where an `atexit`
    function was registered before this one (`coverage run`, a program that
    embeds the command), the process ends as usual.

    Example: `keras-gauss train-hierarchy --edges pairs.tsv --out runs/h`.
    """
    from keras_gauss import fast_exit

    fast_exit.end_without_teardown()
    code = main(argv)
    fast_exit.done(code)
    sys.exit(code)
