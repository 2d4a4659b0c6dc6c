"""Energies of a word against its positive context and negatives."""

from keras import ops

from keras_gauss import energies
from keras_gauss.layers.el_energy import ELEnergy  # noqa: F401 (the doctest's)

# energy name -> layer of the corpus energies (`keras_gauss.energies`); with
# an asymmetric one the first (word) side is the general one
ENERGIES = energies.names(task="corpus")
ENERGY_LAYERS = {name: energies.get(name).layer_class() for name in ENERGIES}


def candidate_energies(energy_layer, words, contexts, word, context, negatives):
    """Scores each word against `[context, negative_1, ..., negative_k]`.

    The context and its negatives are looked up in one gather of
    `concat([context[:, None], negatives])` and compared with the word by
    broadcasting `(B, 1, d)` against `(B, 1 + k, d)`. With `KLEnergy` the word
    is the general side: `E(w, c) = -KL(N_c || N_w)`.

    Args:
        energy_layer: an `ELEnergy` or `KLEnergy` layer.
        words: the `GaussianEmbedding` of the words.
        contexts: the `GaussianEmbedding` of the contexts (may be `words`).
        word: `(B,)` word ids.
        context: `(B,)` positive context ids.
        negatives: `(B, k)` negative context ids.

    Returns:
        `(B, 1 + k)` energies, the positive context first: what
        `MaxMarginRanking` with labels `[1, 0, ..., 0]` expects.

    Example:

    >>> import numpy as np
    >>> from keras_gauss.layers import GaussianEmbedding
    >>> table = GaussianEmbedding(10, 4)
    >>> energies = candidate_energies(ELEnergy(), table, table, np.array([1]),
    ...                               np.array([2]), np.array([[3, 4]]))
    >>> tuple(energies.shape)  # (batch, 1 positive + 2 negatives)
    (1, 3)
    """
    candidates = ops.concatenate([ops.expand_dims(context, -1), negatives], axis=-1)
    mean_w, var_w = words(word)
    mean_c, var_c = contexts(candidates)
    return energy_layer(ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1),
                        mean_c, var_c)
