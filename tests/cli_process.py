"""`keras-gauss` commands in child processes, for the kill-and-resume tests.

`run_cli` runs the CLI in a fresh Python and reports which of TensorFlow
and Keras the child had imported when it ended, by exit or by the test
hook's SIGKILL; `killed` runs it with the hook that SIGKILLs the child at
its N-th checkpoint and returns that checkpoint's state.

Example:

>>> state, modules = killed(["train-corpus", "--corpus", "c.txt"], out, KILL_AFTER, 3)  # doctest: +SKIP
>>> modules
{'tensorflow': False, 'keras': False}
"""

import contextlib
import json
import os
import subprocess
import sys

from fault_injection import PRELUDE as FAULTS
from keras_gauss.checkpoint import read_checkpoint

MARK = "keras-gauss-test-modules "
# Run in the child before the command: prints MARK and the modules at exit
# and just before the kill hook's SIGKILL (os.kill of its own process).
_REPORT = f"""
import json, os, signal, sys
def _report():
    print({MARK!r} + json.dumps({{"tensorflow": "tensorflow" in sys.modules,
                                 "keras": "keras" in sys.modules,
                                 "nltk": "nltk" in sys.modules}}), file=sys.stderr, flush=True)
_kill = os.kill
def _reporting_kill(pid, sig):
    if pid == os.getpid() and sig == signal.SIGKILL:
        _report()
    _kill(pid, sig)
os.kill = _reporting_kill
"""


def run_cli(argv, env=None, prelude="", timeout=300):
    """Runs `keras-gauss ARGV` in a child Python (after `prelude`, Python code),
    as the console script does (`keras_gauss.cli.command`).

    Returns:
        `(completed_process, modules)`: `modules` is `{"tensorflow": bool,
        "keras": bool, "nltk": bool}` of the child's `sys.modules` when the command
        returned or the kill hook fired, or None when neither happened.
    """
    # The console script's own end (`keras_gauss.cli.command`), with the
    # report when `main` returns or fails.
    code = (_REPORT + FAULTS + prelude + "\nimport keras_gauss.cli as _cli\n_main = _cli.main\n"
            "def _reporting_main(argv=None):\n    try:\n        return _main(argv)\n"
            "    finally:\n        _report()\n_cli.main = _reporting_main\n"
            "_cli.command(sys.argv[1:])\n")
    result = subprocess.run([sys.executable, "-c", code, *map(str, argv)],
                            env={**os.environ, **(env or {})}, capture_output=True, text=True,
                            timeout=timeout)
    reports = [line[len(MARK):] for line in result.stderr.splitlines() if line.startswith(MARK)]
    return result, json.loads(reports[-1]) if reports else None


def killed(argv, out, variable, count, env=None, prelude=""):
    """Runs `keras-gauss ARGV --out OUT --checkpoint-every 1e-9` (a checkpoint
    after every chunk or step) in a child that SIGKILLs itself at the
    `count`-th checkpoint (`variable`: `KILL_AFTER` or `KILL_DURING` of
    `fault_injection`); asserts it was killed before writing the run.

    Returns:
        `(state, modules)`: the state of the checkpoint left in `out`, and
        `run_cli`'s `modules` at the kill.
    """
    result, modules = run_cli([*argv, "--out", out, "--checkpoint-every", "1e-9"],
                        env={**(env or {}), variable: str(count)}, prelude=prelude)
    assert result.returncode == -9, result.stderr[-2000:]
    assert not (out / "run.json").exists()
    return read_checkpoint(out)[0], modules


def disk_full(pattern, after=0):
    """Prelude (for `run_cli`) of a child whose disk fills up: every write to a
    file whose path matches `pattern` (`fnmatch`, absolute path) raises
    `OSError(ENOSPC)`, from the `after + 1`-th such file opened on (the
    first `after` are written whole). The files of every writer in Python
    (`open`, `os.fdopen`, `pathlib`, `zipfile`, h5py through them) go
    through `io.open`; the patch wraps what it returns.

    Example:

    >>> result, _ = run_cli(argv, prelude=disk_full("*/.checkpoint/.state.npz.tmp-*", 2))  # doctest: +SKIP
    """
    return f"""
import builtins as _builtins, errno as _errno, fnmatch as _fnmatch, io as _io
_real_open, _opened = _io.open, [0]
class _Full:
    def __init__(self, f):
        self._f = f
    def write(self, data):
        raise OSError(_errno.ENOSPC, os.strerror(_errno.ENOSPC))
    def __getattr__(self, name):
        return getattr(self._f, name)
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self._f.close()
    def __iter__(self):
        return iter(self._f)
def _open(file, mode="r", *args, **kwargs):
    f = _real_open(file, mode, *args, **kwargs)
    name = os.readlink(f"/proc/self/fd/{{file}}") if isinstance(file, int) else os.fspath(file)
    if any(c in mode for c in "wax+") and _fnmatch.fnmatch(os.path.abspath(name), {pattern!r}):
        _opened[0] += 1
        if _opened[0] > {after}:
            return _Full(f)
    return f
_io.open = _builtins.open = _open
"""


@contextlib.contextmanager
def disk_full_here(pattern, after=0):
    """`disk_full` in this process: within the block, writes to the files
    whose path matches `pattern` fail as `disk_full`'s child's do (its very
    code, run here); the real `open` is back after the block.

    Example:

    >>> with disk_full_here("*/exports/*.tmp-*"):  # doctest: +SKIP
    ...     main(["export", "runs/a", "--out", "exports/serve", "--overwrite"])
    """
    import builtins
    import io

    real = io.open, builtins.open
    exec(disk_full(pattern, after), {"os": os})
    try:
        yield
    finally:
        io.open, builtins.open = real


def interrupted(argv, out, count):
    """`killed` in this process: runs `keras-gauss ARGV --out OUT
    --checkpoint-every 1e-9` through `main`, stopped by
    `fault_injection.interrupted_at(count)` right after its `count`-th
    checkpoint; asserts it stopped before writing the run.

    Returns:
        the state of the checkpoint left in `out`.
    """
    import pytest

    from fault_injection import Interrupted
    from fault_injection import interrupted_at
    from keras_gauss.cli import main

    with pytest.raises(Interrupted), interrupted_at(count):
        main([*map(str, argv), "--out", str(out), "--checkpoint-every", "1e-9"])
    assert not (out / "run.json").exists()
    return read_checkpoint(out)[0]
