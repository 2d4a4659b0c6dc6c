"""A run's training curves: per-epoch loss and validation scores, as CSV and PNG.

Every run of the `keras-gauss` trainers writes `history.csv` (one row an
epoch: `epoch`, `loss` and, where the run selects on validation edges, its
validation score such as `val_accuracy`) and `history.png` (the loss, and
the validation score beside it). `keras-gauss plot RUN` prints the table
and redraws the figure.

Example:

>>> write_history("runs/x", {"loss": [1.5, 0.4], "val_accuracy": [0.8, 0.9]})  # doctest: +SKIP
>>> read_history("runs/x")  # doctest: +SKIP
{'epoch': [1, 2], 'loss': [1.5, 0.4], 'val_accuracy': [0.8, 0.9]}
"""

import csv
import math
import os
import warnings
from pathlib import Path

HISTORY_CSV = "history.csv"
HISTORY_PNG = "history.png"


def write_history(run_dir, columns):
    """Writes `history.csv` and `history.png` of `columns` into `run_dir`.

    Args:
        run_dir: the run directory (it exists).
        columns: `{name: [value per epoch]}`, `loss` first; lists of equal
            length (a shorter one, e.g. of a run resumed from an older
            checkpoint, is padded at the front with empty cells).

    Returns:
        The PNG's path, or None when there is no epoch to draw or
        matplotlib is not installed (then the CSV alone, and one warning).

    Example:

    >>> import os
    >>> os.makedirs("run", exist_ok=True)
    >>> write_history("run", {"loss": [0.9, 0.5], "val_accuracy": [0.7, 0.8]}).name
    'history.png'
    >>> read_history("run")["val_accuracy"]
    [0.7, 0.8]
    >>> print(format_history(read_history("run")))
    epoch    loss  val_accuracy
        1  0.9000        0.7000
        2  0.5000        0.8000
    """
    run_dir = Path(run_dir)
    columns = {name: list(values) for name, values in columns.items() if values is not None}
    epochs = max((len(v) for v in columns.values()), default=0)
    if not epochs:
        return None
    columns = {name: [None] * (epochs - len(v)) + v for name, v in columns.items()}
    with open(run_dir / HISTORY_CSV, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["epoch", *columns])
        for i in range(epochs):
            writer.writerow([i + 1, *(_cell(columns[name][i]) for name in columns)])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        warnings.warn(f"matplotlib is not installed: {run_dir / HISTORY_CSV} written, "
                      f"no {HISTORY_PNG} (pip install matplotlib)", RuntimeWarning, stacklevel=2)
        return None
    return draw_history(read_history(run_dir), run_dir / HISTORY_PNG)


def _cell(value):
    return "" if value is None or not math.isfinite(value) else repr(float(value))


def read_history(run_dir):
    """`{"epoch": [...], name: [value or None, ...]}` of a run's `history.csv`.

    Raises:
        FileNotFoundError: the run has no `history.csv`, or `run_dir` holds
            an interrupted run or no run (one line naming it).

    Example: see `write_history`.
    """
    path = Path(run_dir) / HISTORY_CSV
    if not path.is_file():
        from keras_gauss.checkpoint import interrupted_note
        from keras_gauss.run_format import RUN_FILE

        interrupted = interrupted_note(run_dir)
        if interrupted is not None:  # as `load_run` says it
            raise FileNotFoundError(f"{interrupted}.")
        if not (Path(run_dir) / RUN_FILE).is_file():
            raise FileNotFoundError(f"{run_dir} holds no trained run (no {RUN_FILE}).")
        raise FileNotFoundError(f"{path}: no training history (runs written before "
                                "history.csv existed have none).")
    with open(path, newline="") as file:
        rows = list(csv.reader(file))
    names, rows = rows[0], rows[1:]
    table = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    return {name: [int(v) for v in values] if name == "epoch" else
            [float(v) if v else None for v in values] for name, values in table.items()}


def draw_history(history, path):
    """Draws the loss (left) and the validation scores (right) per epoch to `path` (a
    PNG; a name or a binary file object); returns it.

    Example: `draw_history(read_history("run"), "curves.png")` (see `write_history`).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = [name for name in history if name not in ("epoch", "loss")]
    fig, axes = plt.subplots(1, 1 + bool(scores), figsize=(4.5 * (1 + bool(scores)), 3.2),
                             squeeze=False)
    epochs = history["epoch"]
    loss = axes[0][0]
    loss.plot(epochs, _nan(history["loss"]), marker="o", markersize=3)
    loss.set(xlabel="epoch", ylabel="training loss", title="loss")
    if min((v for v in history["loss"] if v is not None), default=0) > 0:
        loss.set_yscale("log")
    if scores:
        ax = axes[0][1]
        for name in scores:
            ax.plot(epochs, _nan(history[name]), marker="o", markersize=3, label=name)
        ax.set(xlabel="epoch", ylabel="validation score", title="validation")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
    return Path(path) if isinstance(path, (str, os.PathLike)) else path


def _nan(values):
    return [math.nan if v is None else v for v in values]


def format_history(history):
    """The history as an aligned text table (what `keras-gauss plot` prints; see
    `write_history` for an example)."""
    names = list(history)
    rows = [names] + [[str(history["epoch"][i])] + [
        "" if history[n][i] is None else f"{history[n][i]:.4f}" for n in names[1:]]
        for i in range(len(history["epoch"]))]
    widths = [max(len(row[j]) for row in rows) for j in range(len(names))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows)


def add_parser(subparsers):
    """The `keras-gauss plot RUN` subcommand."""
    plot = subparsers.add_parser(
        "plot", help="print a run's training curves and draw them to a PNG",
        description=("Print the per-epoch loss and validation scores of a run (its "
                     f"{HISTORY_CSV}) and draw them to --out (default: RUN/{HISTORY_PNG})."))
    plot.add_argument("run_dir", metavar="RUN", help="a run directory")
    plot.add_argument("--out", default=None,
                      help=f"the PNG to write, a name ending in .png (default: RUN/{HISTORY_PNG})")
    plot.add_argument("--overwrite", action="store_true",
                      help="replace an existing --out file (RUN/history.png is always redrawn)")
    plot.set_defaults(handler=run_plot)


def plot_path(run_dir, out=None, overwrite=False):
    """The PNG `keras-gauss plot` writes: `out`, else the run's own `history.png`.

    Raises:
        CommandError: one line naming `--out`: not a `.png` name, a directory,
            a directory that does not exist, an existing file without
            `overwrite`, or a path inside a run or an export of ours (but
            the run's own `history.png`, always redrawn).
    """
    from keras_gauss.checks import CommandError
    from keras_gauss.io import OutputExistsError
    from keras_gauss.io import check_not_inside_an_output

    own = Path(run_dir) / HISTORY_PNG
    if out is None or os.path.abspath(out) == os.path.abspath(own):  # always redrawn
        return own
    path = Path(out)
    if path.is_dir():
        raise CommandError(f"--out {out} is a directory; give the PNG's file name, e.g. "
                           f"{path / HISTORY_PNG}.")
    if path.suffix.lower() != ".png":
        raise CommandError(f"--out {out}: plot writes a PNG; give a name ending in .png.")
    if not path.absolute().parent.is_dir():
        raise CommandError(f"--out {out}: no such directory {path.absolute().parent}.")
    if path.exists() and not overwrite:
        raise CommandError(f"--out {out} already exists; pass --overwrite to replace it.")
    try:  # a run or an export holds only files of ours
        check_not_inside_an_output(Path(os.path.abspath(path)))
    except OutputExistsError as error:
        raise CommandError(f"--out {error}") from None
    return path


def run_plot(args):
    from keras_gauss.checks import CommandError
    from keras_gauss.io import atomic_file

    out = plot_path(args.run_dir, args.out, args.overwrite)
    try:
        history = read_history(args.run_dir)
    except (OSError, ValueError, IndexError) as error:
        raise CommandError(str(error) or f"{args.run_dir}: unreadable {HISTORY_CSV}") from None
    print(format_history(history))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CommandError("drawing needs matplotlib, which is not installed "
                           "(pip install matplotlib).") from None
    try:  # drawn beside it and renamed when complete: a failure leaves the old file as it was
        with atomic_file(out, overwrite=True, mode="wb") as handle:
            draw_history(history, handle)
    except OSError as error:
        raise CommandError(str(error)) from None
    print(f"figure: {out}")
