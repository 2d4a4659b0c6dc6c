"""Progress output, without Keras: `Phase` (one line for a long step) and
`Progress` (a bar on a terminal, one line per epoch otherwise;
`keras_gauss.callbacks.ProgressLogger` is the same as a Keras callback).

Progress is best-effort: output that cannot be written (a closed pipe, a
full disk) is dropped after one warning line on stderr, and the job goes on
(`BestEffortStream`, and `write_best_effort` through it).

Without a `stream` of their own, both send their text to the logger
`keras_gauss.progress` (`logging`, level INFO, `LOGGER`), whose one handler
(`ConsoleHandler`, not propagating) writes it to `sys.stdout` as it is: the
`keras-gauss` command's output. Standard `logging` silences or moves it:

>>> import logging
>>> logging.getLogger("keras_gauss.progress").setLevel(logging.WARNING)  # silent
>>> logging.getLogger("keras_gauss.progress").setLevel(logging.INFO)     # back on

(or the whole package's: `logging.getLogger("keras_gauss").setLevel(logging.WARNING)`)

and `LOGGER.handlers = [logging.FileHandler("progress.log")]` writes it to
a file instead (a record a line, or part of one: a `Phase` gives its
message, then its duration; `record.end` is `"\\n"` where a line ends). The
bar is drawn only when the text goes to the console and that is a terminal.
"""

import logging
import shutil
import sys
import time

MODES = ("auto", "bar", "lines", "off")

_warned = False  # the warning line of a failed output is written once


def _output_failed(error):
    global _warned
    if _warned:
        return
    _warned = True
    reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
    try:
        sys.stderr.write(f"keras-gauss: warning: output dropped: {reason}; the job goes on\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


class BestEffortStream:
    """A text stream whose writes never fail the caller (`keras-gauss`
    puts one around `sys.stdout` for a command's run).

    The first failed write or flush (`OSError`: a closed pipe, a full disk;
    `ValueError`: a closed file) writes one warning line on stderr (once a
    process); that write and every later one are dropped: progress output
    is never the reason a job fails. Characters the stream's encoding
    cannot hold (`LC_ALL=C`) are written as backslash escapes.

    Args:
        stream: the stream to wrap (`sys.stdout`).

    Example:

    >>> import io
    >>> out = BestEffortStream(io.StringIO())
    >>> out.write("saved")
    5
    """

    def __init__(self, stream):
        self.stream = stream
        self.failed = False

    def write(self, text):
        try:
            self._attempt(self.stream.write, text)
        except UnicodeEncodeError:  # (a stream whose encoding lacks a character: LC_ALL=C)
            encoding = getattr(self.stream, "encoding", None) or "ascii"
            self._attempt(self.stream.write,
                          text.encode(encoding, "backslashreplace").decode(encoding))
        return len(text)

    def flush(self):
        self._attempt(self.stream.flush)

    def _attempt(self, action, *args):
        if not self.failed:
            try:
                action(*args)
            except UnicodeEncodeError:
                raise
            except (OSError, ValueError) as error:
                self.failed = True
                _output_failed(error)

    def isatty(self):
        return is_terminal(self.stream)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def write_best_effort(stream, text):
    """Writes and flushes `text` to `stream` through a `BestEffortStream`;
    returns False (after its one warning line) when it cannot.

    Example:

    >>> import io
    >>> write_best_effort(io.StringIO(), "epoch 1")
    True
    """
    out = stream if isinstance(stream, BestEffortStream) else BestEffortStream(stream)
    out.write(text)
    out.flush()
    return not out.failed


class ConsoleHandler(logging.Handler):
    """`LOGGER`'s handler: writes each record's text as it is (`record.end`
    after it: `"\\n"`, or `""` for part of a line) to the `sys.stdout` of the
    moment, best-effort (`write_best_effort`)."""

    def emit(self, record):
        write_best_effort(sys.stdout, record.getMessage() + getattr(record, "end", "\n"))


def _package_level(record):
    """`LOGGER`'s filter: a level set on the package's logger (`keras_gauss`)
    holds for progress too, although `LOGGER` has a level of its own."""
    return record.levelno >= logging.getLogger("keras_gauss").level


LOGGER = logging.getLogger("keras_gauss.progress")
if not LOGGER.handlers:  # once a process (a reload keeps the handlers and level set)
    LOGGER.setLevel(logging.INFO)
    LOGGER.addHandler(ConsoleHandler())
    LOGGER.addFilter(_package_level)
    LOGGER.propagate = False


def emit(text, stream=None):
    """Writes progress `text` (a line or part of one) to `stream`, best-effort;
    without one, logs it on `LOGGER` at INFO (by default: to `sys.stdout`).

    Example:

    >>> emit("epoch 1\\n")
    epoch 1
    """
    if stream is not None:
        write_best_effort(stream, text)
    elif LOGGER.isEnabledFor(logging.INFO):
        body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        LOGGER.info(body, extra={"end": end})


def _to_console():
    """Whether `LOGGER`'s records go to the console (its `ConsoleHandler` only)."""
    return (LOGGER.isEnabledFor(logging.INFO) and bool(LOGGER.handlers)
            and all(isinstance(h, ConsoleHandler) for h in LOGGER.handlers))


class Phase:
    """One line for a long step that has no progress of its own.

    Prints `message...` when created and ` 12.3 s` (its duration) when
    `done()` is called, for the silent steps around training: preparing
    data, evaluating, saving. Also a context manager. If the step fails
    before `done()`, `Phase.break_line()` (the `keras-gauss` command calls
    it before printing an error) ends the line, so the error starts on a
    line of its own.

    Args:
        message: what the step does, e.g. `"saving the run to runs/x"`.
        verbose: print nothing when false.
        stream: where to write (default: `LOGGER`, that is `sys.stdout` at
            the time of writing).

    Example:

    >>> with Phase("counting"):  # prints "counting... 0.0 s"
    ...     total = sum(range(1000))
    counting... ... s
    >>> step = Phase("saving"); seconds = step.done()  # the same, by hand
    saving... ... s
    """

    _open = None  # the phase whose line is not finished yet

    def __init__(self, message, verbose=True, stream=None):
        self.message = message
        self.verbose = bool(verbose)
        self.stream = stream
        self.start = time.perf_counter()
        self.seconds = None
        if self.verbose:
            Phase.break_line()
            self._write(f"{message}...")
            Phase._open = self

    def get_config(self):
        return {"message": self.message, "verbose": self.verbose}

    def done(self):
        """Ends the line with the step's duration; returns the seconds."""
        self.seconds = time.perf_counter() - self.start
        if self.verbose and Phase._open is self:
            Phase._open = None
            self._write(f" {self.seconds:.1f} s\n")
        return self.seconds

    @classmethod
    def end_open(cls):
        """Ends an unfinished phase line with its duration (its step is over)."""
        if cls._open is not None:
            cls._open.done()

    @classmethod
    def break_line(cls):
        """Ends an unfinished phase line (before an error or other output)."""
        if cls._open is not None:
            phase, cls._open = cls._open, None
            phase._write("\n")

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is None:
            self.done()
        else:
            Phase.break_line()
        return False

    def _write(self, text):
        emit(text, self.stream)


class Progress:
    """Training progress: a bar on a terminal, one line per epoch otherwise.

    Without Keras (for loops of your own); `ProgressLogger` is the same as a
    Keras callback.

    On a terminal the bar shows the epoch, the fraction done, the ETA, the
    running loss and the throughput (`unit`/s); both leave one line per
    epoch behind. Redirected to a file (or with `mode="lines"`) only the
    epoch lines are written, and within an epoch that lasts longer a line
    every `line_interval` seconds (the fraction done, the ETA, the running
    loss and rate): no `\\r`, `\\b` or colour codes. The ETA and the
    running rate are measured from the end of the first step, so the time
    spent tracing the step does not inflate them (no ETA is shown before the
    second step); the epoch line's rate is over the whole epoch.

    The count behind the throughput is `logs[unit]` (the count so far in
    the epoch) when the logs carry it, else `batch_size` per step (capped at
    `epoch_size`). A loop of your own can drive it: call `set_params({"epochs":
    E, "steps": N})`, then `on_train_begin`, `on_epoch_begin`,
    `on_train_batch_end(i, logs)` with `i + 1` of `N` done, and
    `on_epoch_end`. A loop resumed inside an epoch passes the count done
    before the resume as `on_epoch_begin(epoch, {unit: count})`: the epoch
    line's rate is then over the rest (the line says how much that was).

    Args:
        unit: what the throughput counts, e.g. `"pairs"` or `"edges"`
            (default `"samples"`).
        batch_size: units per step, when the logs carry no count (`None`:
            no throughput unless they do).
        epoch_size: units in an epoch; caps the count `batch_size` gives.
        mode: `"auto"` (a bar when the stream is a terminal, else lines),
            `"bar"`, `"lines"` or `"off"`.
        stream: where to write (default: `LOGGER`, that is `sys.stdout` at
            the time of writing).
        interval: seconds between redraws of the bar (default 0.1).
        line_interval: seconds between the lines within an epoch when
            writing lines (default 60; `None`: the epoch lines only).

    Example:

    >>> progress = Progress(unit="pairs", batch_size=100, mode="lines")
    >>> progress.set_params({"epochs": 1, "steps": 3})
    >>> progress.on_train_begin()
    >>> progress.on_epoch_begin(0)
    >>> for step in range(3):
    ...     progress.on_train_batch_end(step, {"loss": 0.5})
    >>> progress.on_epoch_end(0, {"loss": 0.5})
    Epoch 1/1: loss 0.5000, 300 pairs in ... s (... pairs/s)
    """

    def __init__(self, unit="samples", batch_size=None, epoch_size=None, mode="auto",
                 stream=None, interval=0.1, line_interval=60.0):
        super().__init__()
        if not hasattr(self, "params"):
            self.params = None
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}.")
        self.unit = unit
        self.batch_size = batch_size
        self.epoch_size = epoch_size
        self.mode = mode
        self.stream = stream
        self.interval = interval
        self.line_interval = line_interval
        self._drawn = 0

    @classmethod
    def from_verbose(cls, verbose, **kwargs):
        """The logger of a Keras-style `verbose`: 0 off, 1 auto, 2 lines."""
        return cls(mode={0: "off", 1: "auto"}.get(verbose, "lines"), **kwargs)

    def set_params(self, params):
        self.params = params

    def get_config(self):
        return {"unit": self.unit, "batch_size": self.batch_size,
                "epoch_size": self.epoch_size, "mode": self.mode,
                "interval": self.interval, "line_interval": self.line_interval}

    # -- the Keras callback API --------------------------------------------

    def on_train_begin(self, logs=None):
        # A step announced by `Phase` (a set-up before the loop) ends here.
        Phase.end_open()
        if self.mode == "auto":
            terminal = (is_terminal(self.stream) if self.stream is not None
                        else _to_console() and is_terminal(sys.stdout))
            self._mode = "bar" if terminal else "lines"
        else:
            self._mode = self.mode
        self._drawn = 0

    def on_epoch_begin(self, epoch, logs=None):
        if not hasattr(self, "_mode"):
            self.on_train_begin()
        self._epoch = epoch
        # `logs[unit]`: the count of this epoch done before a resume (not timed here)
        self._before = (logs or {}).get(self.unit) or 0
        self._start = time.perf_counter()
        self._first = None  # (time, position, count) after the first step
        self._position, self._count, self._last_draw = 0, None, 0.0
        self._last_line = self._start

    def on_train_batch_end(self, batch, logs=None):
        logs = logs or {}
        now = time.perf_counter()
        self._position = batch + 1
        self._count = self._count_of(batch + 1, logs)
        self._logs = logs
        if self._first is None:
            self._first = (now, self._position, self._count)
        if self._mode == "bar" and now - self._last_draw >= self.interval:
            self._last_draw = now
            self._draw(self._bar_line(now))
        elif (self._mode == "lines" and self.line_interval is not None
              and now - self._last_line >= self.line_interval):
            self._last_line = now
            self._write(self._within_line(now) + "\n")

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        seconds = time.perf_counter() - self._start
        count = logs[self.unit] if self.unit in logs else self._count_of(self._position, {})
        line = self._epoch_line(epoch, logs, count, seconds)
        if self._mode == "bar":
            self._draw(line)
            self._write("\n")
            self._drawn = 0
        elif self._mode == "lines":
            self._write(line + "\n")

    def on_train_end(self, logs=None):
        if self._drawn:
            self._write("\n")
            self._drawn = 0

    # -- formatting ----------------------------------------------------------

    def _count_of(self, steps, logs):
        if self.unit in logs:
            return logs[self.unit]
        if self.batch_size is None:
            return None
        count = steps * self.batch_size
        return min(count, self.epoch_size) if self.epoch_size is not None else count

    def _prefix(self, epoch):
        epochs = self.params.get("epochs") if self.params else None
        return f"Epoch {epoch + 1}/{epochs}" if epochs else f"Epoch {epoch + 1}"

    def _metrics(self, logs):
        shown = []
        for key, value in logs.items():
            if key == self.unit or key.endswith("/s") or key == "epoch_seconds":
                continue
            try:
                shown.append(f"{key} {float(value):.4f}")
            except (TypeError, ValueError):
                continue
        return shown

    def _epoch_line(self, epoch, logs, count, seconds):
        parts = self._metrics(logs)
        before = getattr(self, "_before", 0)
        if count is not None and before:
            rate = (count - before) / max(seconds, 1e-9)
            parts.append(f"{int(count):,} {self.unit}, {int(count - before):,} since the "
                         f"resume in {seconds:.1f} s ({rate:,.0f} {self.unit}/s)")
        elif count is not None:
            rate = count / max(seconds, 1e-9)
            parts.append(f"{int(count):,} {self.unit} in {seconds:.1f} s "
                         f"({rate:,.0f} {self.unit}/s)")
        else:
            parts.append(f"{seconds:.1f} s")
        return f"{self._prefix(epoch)}: " + ", ".join(parts)

    def _state(self, now):
        """(fraction done or None, ETA text, metrics, rate text or None) so far."""
        steps = self.params.get("steps") if self.params else None
        t1, p1, c1 = self._first
        done = min(self._position / steps, 1.0) if steps else None
        eta = "--"
        if steps and self._position > p1:
            eta = clock_text((now - t1) / (self._position - p1) * max(steps - self._position, 0))
        rate = None
        if self._count is not None and c1 is not None and self._position > p1:
            rate = f"{(self._count - c1) / max(now - t1, 1e-9):,.0f} {self.unit}/s"
        return done, eta, self._metrics(getattr(self, "_logs", {})), rate

    def _bar_line(self, now):
        done, eta, metrics, rate = self._state(now)
        parts = [self._prefix(self._epoch)]
        if done is not None:
            filled = int(done * 20)
            arrow = ">" if filled < 20 else ""
            parts.append(f"[{'=' * filled}{arrow}{'.' * (20 - filled - len(arrow))}] "
                         f"{done:4.0%}")
            parts.append(f"ETA {eta}")
        else:
            parts.append(f"step {self._position:,}")
        return "  ".join(parts + metrics + ([rate] if rate else []))

    def _within_line(self, now):
        """The line of `line_interval` within an epoch: `Epoch 1/3: 45%, ETA 4:10, loss ...`."""
        done, eta, metrics, rate = self._state(now)
        where = (f"{done:.0%}, ETA {eta}" if done is not None
                 else f"step {self._position:,}, {now - self._start:.0f} s")
        return f"{self._prefix(self._epoch)}: " + ", ".join([where] + metrics
                                                            + ([rate] if rate else []))

    # -- output --------------------------------------------------------------

    def _write(self, text):
        emit(text, self.stream)

    def _draw(self, line):
        width = shutil.get_terminal_size((100, 20)).columns - 1
        line = line[:width]
        self._write("\r" + line + " " * max(self._drawn - len(line), 0))
        self._drawn = len(line)


def clock_text(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
