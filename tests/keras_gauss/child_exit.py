"""The end of a test's child script without Python's teardown.

A child that imported TensorFlow and JAX spends about 1.5 CPU-s, after its
last line and its `atexit` functions, tearing its modules down; the tests
read only its files and exit code. `end_without_teardown()`, called before
anything else is imported, registers the `atexit` function that runs last
(they run in reverse order): once the script has called `done()`, and
after every other `atexit` function (a job's end with its other
processes, JAX's shutdown), it flushes the output and ends the process with
`done`'s exit code. A script that fails before `done()` ends as usual (its
traceback, exit 1).

Example:

>>> end_without_teardown()  # first, before TensorFlow or JAX  # doctest: +SKIP
>>> main(*sys.argv[1:])  # doctest: +SKIP
>>> done()  # doctest: +SKIP
"""

import atexit
import os
import sys

_CODE = []


def end_without_teardown():
    """Registers the last `atexit` function (see the module)."""
    atexit.register(_end)


def done(code=0):
    """The script finished: it ends with `code`, without the teardown."""
    _CODE.append(code)


def _end():
    if _CODE:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(_CODE[-1])
