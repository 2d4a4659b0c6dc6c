"""A process's end without Python's teardown of its modules.

A process that imported TensorFlow (or JAX) spends 1-1.5 s, after its last
line and its `atexit` functions, tearing its modules down, and nothing it
wrote depends on that. `end_without_teardown()`, called before anything
registers an `atexit` function, registers the one that runs last (they run
in reverse order): once `done(code)` has been called, and after every other
`atexit` function (a multi-process job's end, JAX's shutdown, h5py's,
logging's), it flushes stdout and stderr and ends the process with `code`.
A process that fails before `done` ends as usual (its traceback). Where an
`atexit` function was registered first (`coverage run`, a program that
embeds ours), nothing is registered and the process ends as usual.

The `keras-gauss` console script ends this way (`keras_gauss.cli.command`).

Example:

>>> end_without_teardown()  # first, before TensorFlow or JAX  # doctest: +SKIP
>>> code = main()  # doctest: +SKIP
>>> done(code)  # doctest: +SKIP
"""

import atexit
import os
import sys

__all__ = ["done", "end_without_teardown"]

_CODES = []


def end_without_teardown():
    """Registers the last `atexit` function (see the module); returns
    whether it did (not where another `atexit` function came first)."""
    ncallbacks = getattr(atexit, "_ncallbacks", None)
    if ncallbacks is None or ncallbacks() != 0:
        return False
    atexit.register(_end)  # the first registered runs last
    return True


def done(code=0):
    """The work finished: the process ends with `code` (an `int`, `None`
    for 0), without the teardown."""
    _CODES.append(code)


def _end():
    if not _CODES:  # failed before `done`: its traceback, Python's usual end
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say
            pass
    code = _CODES[-1]
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
