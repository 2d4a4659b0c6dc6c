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

Example:

>>> from keras_gauss.fused import FusedRankingModel
>>> model = FusedRankingModel(10_000, 50)
>>> model.compile(optimizer=keras_gauss.SparseAdagrad(0.1))
>>> model.fit(dataset)  # x = {"word", "context", "negatives"}, y ignored
"""

from keras_gauss.fused.model import FusedRankingModel
from keras_gauss.fused.skipgram import alias_table
from keras_gauss.fused.skipgram import skipgram_train
from keras_gauss.fused.skipgram import skipgram_triples
from keras_gauss.fused.step import fused_available
from keras_gauss.fused.step import pair_ranking_step
from keras_gauss.fused.step import ranking_step

__all__ = [
    "FusedRankingModel",
    "alias_table",
    "fused_available",
    "pair_ranking_step",
    "ranking_step",
    "skipgram_train",
    "skipgram_triples",
]
