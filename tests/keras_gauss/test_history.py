"""Training curves (keras_gauss.history): history.csv and history.png, `keras-gauss plot`."""

import contextlib
import io
import sys

import pytest

from keras_gauss.cli import main
from keras_gauss.history import format_history
from keras_gauss.history import read_history
from keras_gauss.history import write_history


def test_write_then_read_gives_the_columns_back(tmp_path):
    png = write_history(tmp_path, {"loss": [1.5, 0.25, 0.125], "val_f1": [0.5, 0.75, 0.875]})
    assert png == tmp_path / "history.png" and png.stat().st_size > 1000
    assert read_history(tmp_path) == {"epoch": [1, 2, 3], "loss": [1.5, 0.25, 0.125],
                                      "val_f1": [0.5, 0.75, 0.875]}


def test_a_shorter_or_non_finite_column_leaves_empty_cells(tmp_path):
    write_history(tmp_path, {"loss": [2.0, float("nan"), 1.0], "val_accuracy": [0.9]})
    history = read_history(tmp_path)
    assert history["loss"] == [2.0, None, 1.0]
    assert history["val_accuracy"] == [None, None, 0.9]
    assert format_history(history).splitlines()[0].split() == ["epoch", "loss", "val_accuracy"]


def test_no_epoch_writes_nothing(tmp_path):
    assert write_history(tmp_path, {"loss": []}) is None
    assert not (tmp_path / "history.csv").exists()


def test_without_matplotlib_the_csv_is_written_and_one_warning_says_why(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    with pytest.warns(RuntimeWarning, match="matplotlib is not installed") as caught:
        assert write_history(tmp_path, {"loss": [1.0, 0.5]}) is None
    assert len(caught) == 1
    assert read_history(tmp_path)["loss"] == [1.0, 0.5]
    assert not (tmp_path / "history.png").exists()


def test_plot_prints_the_table_and_draws(tmp_path):
    write_history(tmp_path, {"loss": [1.0, 0.5]})
    (tmp_path / "history.png").unlink()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plot", str(tmp_path), "--out", str(tmp_path / "curves.png")]) == 0
    assert out.getvalue().splitlines()[1].split() == ["1", "1.0000"]
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_plot_of_a_run_without_history_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["plot", str(tmp_path)])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_plot_out_is_a_new_png_in_a_directory_that_exists_or_one_line(tmp_path, capsys):
    # before: a traceback (a missing directory, `.txt`), "figure: curves" while matplotlib
    # wrote curves.png, and any existing file replaced without a word
    from cli_errors import cli_error

    write_history(tmp_path, {"loss": [1.0, 0.5]})
    mine = tmp_path / "mine.png"
    mine.write_bytes(b"a picture of mine")
    (tmp_path / "notes").mkdir()
    for out, message in [
            (tmp_path / "missing" / "curves.png", "no such directory"),
            (tmp_path / "curves.txt", "plot writes a PNG; give a name ending in .png"),
            (tmp_path / "curves", "plot writes a PNG; give a name ending in .png"),
            (tmp_path / "notes", "is a directory; give the PNG's file name"),
            (mine, "already exists; pass --overwrite to replace it")]:
        assert message in cli_error(["plot", tmp_path, "--out", out], capsys)
    assert mine.read_bytes() == b"a picture of mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.csv", "history.png", "mine.png",
                                                          "notes"]
    assert main(["plot", str(tmp_path), "--out", str(mine), "--overwrite"]) == 0
    assert mine.read_bytes().startswith(b"\x89PNG")
    assert main(["plot", str(tmp_path)]) == 0  # the run's own history.png: redrawn


def test_plot_says_what_the_directory_holds_instead_of_a_run(tmp_path, capsys):
    # before: "<dir>/history.csv: no training history (runs written before
    # history.csv existed have none)" for an interrupted run and a directory without one
    import numpy as np

    from cli_errors import cli_error
    from keras_gauss.checkpoint import write_checkpoint

    assert cli_error(["plot", tmp_path], capsys).endswith(
        f"{tmp_path} holds no trained run (no run.json).")
    write_checkpoint(tmp_path, {"format": 2, "kind": "hierarchy",
                                "settings": {"edges": "edges.tsv"}}, {"table/0": np.zeros(1)})
    assert f"{tmp_path} holds an interrupted run" in cli_error(["plot", tmp_path], capsys)
    (tmp_path / ".checkpoint" / "state.npz").unlink()
    (tmp_path / "run.json").write_text("{}")
    assert "history.csv: no training history (runs written before" in cli_error(
        ["plot", tmp_path], capsys)


def test_plot_writes_into_no_run_or_export_but_its_own_history_png(tmp_path, capsys):
    # before: `plot RUN --out RUN/curves.png` or `--out OTHER/history.png --overwrite`
    # wrote there, and the run then held a file we did not write: --overwrite refused it
    from cli_errors import cli_error
    from keras_gauss.io import atomic_directory

    runs = {}
    for name in ("run", "other"):
        with atomic_directory(tmp_path / name) as tmp:
            write_history(tmp, {"loss": [1.0, 0.5]})
        runs[name] = tmp_path / name
    before = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    for out in (runs["run"] / "curves.png", runs["other"] / "history.png"):
        assert f"--out {out} is inside the keras-gauss run" in cli_error(
            ["plot", runs["run"], "--out", out, "--overwrite"], capsys)
    assert {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()} == before
    assert main(["plot", str(runs["run"]), "--out", str(runs["run"] / "history.png")]) == 0
