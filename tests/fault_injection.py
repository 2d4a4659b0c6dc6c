"""Faults injected into a child process from the tests' side: a SIGKILL at
the N-th checkpoint, after it is written or while it is (its data written,
before it replaces the previous one).

A child installs them with `install()` (the `run_cli` prelude and
`shard_run.py` do); the variables below choose the checkpoint. The product
holds no hook: `install` wraps `keras_gauss.checkpoint`'s own functions.

Example:

>>> environ[KILL_AFTER] = "3"  # doctest: +SKIP
>>> install()  # in the child, before the command  # doctest: +SKIP
"""

import contextlib
import os
import signal
import threading

KILL_AFTER = "KERAS_GAUSS_TEST_KILL_AFTER_CHECKPOINT"
KILL_DURING = "KERAS_GAUSS_TEST_KILL_DURING_CHECKPOINT"

# The prelude (Python code) of a child that installs the faults. `tests/` is
# on its path only for this import: its `keras_gauss/` folder of tests would
# hide the package.
TESTS = os.path.dirname(os.path.abspath(__file__))
PRELUDE = (f"import sys\nsys.path.insert(0, {TESTS!r})\nimport fault_injection\n"
           f"sys.path.remove({TESTS!r})\nfault_injection.install()\n")


def _kill_if(variable, count):
    if os.environ.get(variable) == str(count):
        os.kill(os.getpid(), signal.SIGKILL)


def install():
    """Wraps `keras_gauss.checkpoint.write_checkpoint` (and the `np.savez` it
    calls) so that this process SIGKILLs itself at the checkpoint that
    `KILL_AFTER` / `KILL_DURING` count (1: the first this process writes)."""
    if not (os.environ.get(KILL_AFTER) or os.environ.get(KILL_DURING)):
        return
    from keras_gauss import checkpoint

    written = {"count": 0}
    writing = threading.local()
    write_checkpoint, savez = checkpoint.write_checkpoint, checkpoint.np.savez

    def counted_write(*args, **kwargs):
        written["count"] += 1
        writing.count = written["count"]
        try:
            result = write_checkpoint(*args, **kwargs)
        finally:
            writing.count = None
        _kill_if(KILL_AFTER, written["count"])
        return result

    def killing_savez(handle, *args, **kwargs):
        savez(handle, *args, **kwargs)
        if getattr(writing, "count", None) is not None:
            handle.flush()
            _kill_if(KILL_DURING, writing.count)

    checkpoint.write_checkpoint = counted_write
    checkpoint.np.savez = killing_savez


class Interrupted(BaseException):
    """Stands in for a SIGKILL in this process: raised by `interrupted_at`
    (a BaseException, so no `except Exception` of the product catches it)."""


@contextlib.contextmanager
def interrupted_at(count):
    """Within the block, the `count`-th checkpoint (1: the first) is written
    whole and then `Interrupted` is raised in the training thread, so training
    stops there as a SIGKILL after that checkpoint would: on disk, the same
    checkpoint and no run. Cheaper than a killed child (no Python to start);
    each trainer keeps one test with a real SIGKILL (`cli_process.killed`).

    Example:

    >>> with pytest.raises(Interrupted), interrupted_at(3):  # doctest: +SKIP
    ...     main([*argv, "--out", out, "--checkpoint-every", "1e-9"])
    """
    from keras_gauss import checkpoint

    save = checkpoint.Checkpointer.save
    written = {"count": 0}

    def interrupting_save(self, position, arrays):
        save(self, position, arrays)
        written["count"] += 1
        if written["count"] == count:
            self.wait()  # the checkpoint is whole on disk
            raise Interrupted(f"interrupted at checkpoint {count}")

    checkpoint.Checkpointer.save = interrupting_save
    try:
        yield
    finally:
        checkpoint.Checkpointer.save = save
