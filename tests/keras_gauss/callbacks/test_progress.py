"""ProgressLogger: one line per epoch off a terminal, a bar on one, an ETA without the trace;
without a stream, its lines and `Phase`'s go through `logging`."""

import io
import logging
import re
import sys

import keras
import numpy as np
import pytest

from keras_gauss.callbacks import ProgressLogger
from keras_gauss.callbacks import progress as progress_module  # its clock: time.perf_counter
from keras_gauss.callbacks.progress import Phase

CONTROL = ("\r", "\b", "\x1b")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def _fit(logger, epochs=3):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
    model.fit(x, x[:, :1], batch_size=8, epochs=epochs, verbose=0, callbacks=[logger])


def test_redirected_output_has_one_line_per_epoch_and_no_control_codes():
    out = io.StringIO()
    _fit(ProgressLogger(unit="samples", batch_size=8, mode="auto", stream=out))
    text = out.getvalue()
    assert not any(code in text for code in CONTROL)
    lines = text.splitlines()
    assert len(lines) == 3
    for epoch, line in enumerate(lines, start=1):
        assert line.startswith(f"Epoch {epoch}/3: loss ")
        assert "40 samples in " in line and "samples/s)" in line


def test_terminal_gets_a_bar_that_leaves_one_line_per_epoch():
    out = Terminal()
    _fit(ProgressLogger(batch_size=8, stream=out, interval=0), epochs=2)
    text = out.getvalue()
    assert "\r" in text and "\b" not in text and "\x1b" not in text
    assert "[" in text and "ETA" in text
    finals = [line.split("\r")[-1].rstrip() for line in text.split("\n") if line]
    assert [line.split(":")[0] for line in finals] == ["Epoch 1/2", "Epoch 2/2"]


def test_eta_ignores_the_first_traced_step(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: clock[0])
    out = Terminal()
    logger = ProgressLogger(unit="pairs", batch_size=10, stream=out, interval=0)
    logger.set_params({"epochs": 1, "steps": 10})
    logger.on_train_begin()
    logger.on_epoch_begin(0)
    clock[0] = 100.0  # the first step traces the graph: 100 s
    logger.on_train_batch_end(0, {"loss": 1.0})
    assert "ETA --" in out.getvalue().split("\r")[-1]
    for step in (1, 2):  # then 1 s a step
        clock[0] += 1.0
        logger.on_train_batch_end(step, {"loss": 1.0})
    bar = out.getvalue().split("\r")[-1]
    assert "ETA 0:07" in bar  # 7 steps left at 1 s each, not (102 / 3) * 7
    assert "10 pairs/s" in bar


def test_count_from_the_logs_and_off_mode():
    out = io.StringIO()
    logger = ProgressLogger(unit="pairs", mode="lines", stream=out)
    logger.set_params({"epochs": 2, "steps": 100})
    logger.on_train_begin()
    logger.on_epoch_begin(1)
    logger.on_train_batch_end(99, {"loss": 0.5, "pairs": 1234})
    logger.on_epoch_end(1, {"loss": 0.25, "pairs": 1234})
    assert out.getvalue().startswith("Epoch 2/2: loss 0.2500, 1,234 pairs in ")
    quiet = io.StringIO()
    _fit(ProgressLogger(batch_size=8, mode="off", stream=quiet))
    assert quiet.getvalue() == ""
    with pytest.raises(ValueError, match="mode"):
        ProgressLogger(mode="loud")


def test_an_epoch_resumed_midway_rates_only_what_it_trained(monkeypatch):
    # A checkpoint taken after 900 of an epoch's 1,000 pairs: the resumed
    # epoch trains 100 in 2 s; its line read "1,000 pairs in 2.0 s (500
    # pairs/s)", or millions of pairs/s for an epoch the checkpoint had ended.
    clock = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: clock[0])
    out = io.StringIO()
    logger = ProgressLogger(unit="pairs", mode="lines", stream=out)
    logger.set_params({"epochs": 2, "steps": 10})
    logger.on_train_begin()
    logger.on_epoch_begin(0, {"pairs": 900})
    clock[0] = 2.0
    logger.on_train_batch_end(9, {"loss": 0.5, "pairs": 1000})
    logger.on_epoch_end(0, {"loss": 0.5, "pairs": 1000})
    logger.on_epoch_begin(1)
    clock[0] = 4.0
    logger.on_epoch_end(1, {"loss": 0.25, "pairs": 1000})
    assert out.getvalue().splitlines() == [
        "Epoch 1/2: loss 0.5000, 1,000 pairs, 100 since the resume in 2.0 s (50 pairs/s)",
        "Epoch 2/2: loss 0.2500, 1,000 pairs in 2.0 s (500 pairs/s)"]


def test_a_long_epoch_off_a_terminal_writes_a_line_every_line_interval(monkeypatch):
    # Redirected, an epoch of minutes (a deep taxonomy: 471 s) wrote nothing
    # until its end; now a line a minute says how far it is.
    clock = [0.0]
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: clock[0])
    out = io.StringIO()
    logger = ProgressLogger(unit="edges", batch_size=100, mode="lines", stream=out)
    logger.set_params({"epochs": 3, "steps": 10})
    logger.on_train_begin()
    logger.on_epoch_begin(0)
    for step in range(10):
        clock[0] = 10.0 + 25.0 * step  # 10 s to trace, then 25 s a step
        logger.on_train_batch_end(step, {"loss": 2.0 - step / 10})
    logger.on_epoch_end(0, {"loss": 1.1})
    lines = out.getvalue().splitlines()
    assert lines == [
        "Epoch 1/3: 30%, ETA 2:55, loss 1.8000, 4 edges/s",  # at 60 s
        "Epoch 1/3: 60%, ETA 1:40, loss 1.5000, 4 edges/s",  # at 135 s
        "Epoch 1/3: 90%, ETA 0:25, loss 1.2000, 4 edges/s",  # at 210 s
        "Epoch 1/3: loss 1.1000, 1,000 edges in 235.0 s (4 edges/s)"]
    quiet = io.StringIO()
    logger = ProgressLogger(unit="edges", batch_size=100, mode="lines", stream=quiet,
                            line_interval=None)
    logger.set_params({"epochs": 1, "steps": 10})
    logger.on_train_begin()
    logger.on_epoch_begin(0)
    clock[0] = 1e6
    logger.on_train_batch_end(0, {"loss": 1.0})
    assert quiet.getvalue() == ""


def test_get_config_and_from_verbose():
    logger = ProgressLogger(unit="edges", batch_size=4, epoch_size=10, mode="lines")
    assert ProgressLogger(**logger.get_config()).get_config() == logger.get_config()
    assert [ProgressLogger.from_verbose(v).mode for v in (0, 1, 2)] == ["off", "auto", "lines"]


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_without_a_stream_the_lines_go_through_logging(monkeypatch, capsys):
    """By default to stdout as they are (the command's output); silenced by
    the logger's level; a handler of the user's takes them instead of stdout
    (and the bar gives way to lines, even on a terminal)."""
    logger = logging.getLogger("keras_gauss.progress")
    _fit(ProgressLogger(batch_size=8, mode="lines"), epochs=2)
    Phase("saving").done()
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines()[:2]] == ["Epoch 1/2", "Epoch 2/2"]
    assert re.fullmatch(r"saving\.\.\. \d+\.\d s", out.splitlines()[2])

    for name in ("keras_gauss.progress", "keras_gauss"):  # its own level, or the package's
        logging.getLogger(name).setLevel(logging.WARNING)
        try:
            _fit(ProgressLogger(batch_size=8, mode="lines"), epochs=2)
            Phase("saving").done()
        finally:
            logging.getLogger(name).setLevel(logging.INFO if name == "keras_gauss.progress"
                                             else logging.NOTSET)
        assert capsys.readouterr().out == "", name

    mine = Records()
    monkeypatch.setattr(logger, "handlers", [mine])
    monkeypatch.setattr("sys.stdout", Terminal())
    _fit(ProgressLogger(batch_size=8, interval=0), epochs=2)
    assert sys.stdout.getvalue() == ""
    said = [record.getMessage() for record in mine.records]
    assert [line.split(":")[0] for line in said] == ["Epoch 1/2", "Epoch 2/2"]
    assert all(record.levelno == logging.INFO and record.end == "\n" for record in mine.records)
