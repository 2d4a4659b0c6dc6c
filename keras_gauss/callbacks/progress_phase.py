import sys
import time


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
        stream: where to write (default: `sys.stdout` at the time of writing).

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
        out = self.stream if self.stream is not None else sys.stdout
        out.write(text)
        out.flush()
