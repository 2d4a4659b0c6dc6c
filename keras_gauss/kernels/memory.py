"""Keeps the memory of freed step buffers for the next step (glibc malloc).

A training step's large buffers come from `malloc` (XLA on CPU allocates all
of a JAX step's temporaries in one block, ~40 MB for the README quick start
at batch 16,384) and are freed at its end. With glibc's defaults such blocks
are mapped anew every step and handed back when freed, so every step faults
its buffers in again as zeroed pages: on JAX that cost more CPU time than
the step's arithmetic (`benchmarks/README.md`). `keep_freed_memory` sets
what `MALLOC_MMAP_THRESHOLD_=32M MALLOC_TRIM_THRESHOLD_=1G
MALLOC_TOP_PAD_=512M` (and, for JAX, `MALLOC_ARENA_MAX=1`) would: blocks come
from the heap, which grows in large steps and keeps what is freed; JAX's
threads share the main heap, the one that is not limited to 64 MB blocks.
It acts on threads that have not allocated yet, so `keras_gauss.kernels`
calls it when it is imported, before a model builds its weights; set
`KERAS_GAUSS_MALLOC=0` to leave malloc as it is.

Example:

>>> from keras_gauss.kernels.memory import keep_freed_memory
>>> keep_freed_memory() in (True, False)
True
"""

import ctypes
import os
import sys

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -2, -3, -8
_done = []


def keep_freed_memory(one_arena=False):
    """Sets glibc's malloc to keep freed memory (once); True if it did.

    Args:
        one_arena: also make every thread allocate from the main heap.
    """
    if _done:
        return _done[0]
    _done.append(False)
    if os.environ.get("KERAS_GAUSS_MALLOC", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    options = [(_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 1 << 30),
               (_M_TOP_PAD, 512 << 20)] + ([(_M_ARENA_MAX, 1)] if one_arena else [])
    _done[0] = all(mallopt(option, value) == 1 for option, value in options)
    return _done[0]
