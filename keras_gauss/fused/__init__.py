"""The C++ library: the layers' kernels, the native trainer and the fused steps.

The C++ sources compile on first use (`keras_gauss.fused.build`) into a
TensorFlow op library (the layers' kernels, `keras_gauss.kernels`, and the
fused steps), an XLA FFI library for JAX, and a TensorFlow-free library:
`NativeTables`, the trainer of `train-corpus --engine native`, and
`NativePairTable`, the trainer of `train-wordnet --engine native`.
`ranking_step` (a minibatch of `(word, context, negatives)`),
`pair_ranking_step` (lists of `(general, specific)` pairs, the hierarchy
model) and `skipgram_train` (token ids to updated tables, the native
trainer's kernel) are the whole max-margin AdaGrad step in one C++ op,
raising `RuntimeError` when the library cannot be built.

Example: see `ranking_step`.
"""

from keras_gauss._lazy import lazy_exports

# Each public name loads its module on first use (PEP 562): the native
# trainer (`keras_gauss.fused.native`) and `build` do not import TensorFlow.
_EXPORTS = {
    "NativePairTable": "pairs",
    "NativeTables": "native",
    "alias_table": "sampling",
    "fused_available": "step",
    "native_available": "native",
    "pair_ranking_step": "step",
    "ranking_step": "step",
    "skipgram_train": "skipgram",
    "skipgram_triples": "skipgram",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "NativePairTable",
    "NativeTables",
    "alias_table",
    "fused_available",
    "native_available",
    "pair_ranking_step",
    "ranking_step",
    "skipgram_train",
    "skipgram_triples",
]
