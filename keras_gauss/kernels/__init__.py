"""Compiled kernels behind the layers' own ops, or the reference `keras.ops` code.

In a training step (`training=True`, as `model.fit` calls a model),
`ELEnergy`, `KLEnergy`, `SparseAdagrad` and, on JAX, `GaussianEmbedding`
lookups run compiled kernels: C++ TensorFlow ops (`fused/layer_ops.cc`, in
the TensorFlow op library) or, on JAX's CPU, XLA FFI handlers into the same C++
(`fused/jax_ops.cc`). Elsewhere (predictions, exports, a JAX GPU where XLA
fuses the `keras.ops` code, `keras.distribution`, TensorFlow's XLA) the
layers run the reference `keras.ops` code, so a SavedModel never needs our
library. On TensorFlow, an energy of the lookups' rows sends its gradient
to the tables' rows, summed by row (`tensorflow_kernels.lookup_energy`: the
same floats, a row per table row for the optimizer to read).
`KERAS_GAUSS_KERNELS=reference` forces the reference (tests compare
both); when a library cannot be built, one warning says why. Importing this
module also sets malloc to keep freed step buffers (`kernels.memory`).

Example:

>>> from keras_gauss import kernels
>>> kernels.get(training=False) is None  # inference: the reference ops
True
"""

import logging
import os

import keras

from keras_gauss.fused import build as _build
from keras_gauss.kernels.memory import keep_freed_memory

if keras.backend.backend() == "tensorflow":
    from keras_gauss.kernels import tensorflow_kernels as _backend
elif keras.backend.backend() == "jax":
    from keras_gauss.kernels import jax_kernels as _backend
else:
    _backend = None

logger = logging.getLogger("keras_gauss.kernels")
_warned = []
keep_freed_memory(one_arena=keras.backend.backend() == "jax")


def get(training=True):
    """The backend's kernel module for this step, or None (use the reference)."""
    if not training or _backend is None or not _backend.applies():
        return None
    if os.environ.get("KERAS_GAUSS_KERNELS", "").lower() in ("0", "off", "reference"):
        return None
    reason = _backend.unavailable()
    if reason is None:
        return _backend
    quiet = (getattr(_backend, "LOADER_WARNS", False) or "KERAS_GAUSS_DISABLE_FUSED" in reason
             or _build.NOT_COMPILED_AGAIN in reason)  # the first failure said why
    if not _warned and not quiet:
        _warned.append(reason)
        logger.warning("keras_gauss: the compiled layer kernels are unavailable (%s); "
                       "the layers train with their keras.ops code instead.", reason)
    return None
