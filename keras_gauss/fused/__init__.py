"""Fused training step for Gaussian embeddings (C++ TensorFlow op).

A plain TensorFlow step (gathers, energy math, backprop, four sparse AdaGrad
updates with `unique`/`segment_sum`/scatters, constraints) spends most of
its time in op dispatch. `ranking_step` does the whole minibatch update in
one C++ kernel, compiled on first use (see `keras_gauss.fused.build`), and
falls back to an equivalent pure TensorFlow implementation when the library
cannot be built or loaded. `FusedRankingModel` wraps it in a Keras model.
`pair_ranking_step` is the same for lists of `(general, specific)` pairs,
where both sides change from candidate to candidate (the hierarchy model;
`keras_gauss.hierarchy.model.FusedKLTrainer` wraps it).
`skipgram_train` goes further: from token ids to updated tables in one op
(subsampling, windows, negatives and the ranking steps; multi-threaded),
also with an exact pure TensorFlow fallback.

Example: see `FusedRankingModel` (`x = {"word", "context", "negatives"}`).
"""

from keras_gauss._lazy import lazy_exports

# Each public name loads its module on first use (PEP 562): the native
# trainer (`keras_gauss.fused.native`) and `build` do not import TensorFlow.
_EXPORTS = {
    "FusedRankingModel": "model",
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
    "FusedRankingModel",
    "NativeTables",
    "alias_table",
    "fused_available",
    "native_available",
    "pair_ranking_step",
    "ranking_step",
    "skipgram_train",
    "skipgram_triples",
]
