"""The C++ libraries: the layers' kernels and the native corpus trainer.

The C++ sources compile on first use (`keras_gauss.fused.build`) into a
TensorFlow op library and an XLA FFI library for JAX (the layers' kernels,
`keras_gauss.kernels`), and a TensorFlow-free library: `NativeTables`, the
trainer of `train-corpus --engine native`, and `skipgram_triples`, the
triples it trains on.

Example: see `NativeTables`.
"""

from keras_gauss._lazy import lazy_exports

# Each public name loads its module on first use (PEP 562): the native
# trainer (`keras_gauss.fused.native`) and `build` do not import TensorFlow.
_EXPORTS = {
    "NativeTables": "native",
    "alias_table": "sampling",
    "native_available": "native",
    "skipgram_triples": "native",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "NativeTables",
    "alias_table",
    "native_available",
    "skipgram_triples",
]
