"""The hierarchy model: one shared Gaussian table scored with asymmetric KL."""

import keras
import numpy as np
from keras import ops

from keras_gauss import energies
from keras_gauss.layers import GaussianEmbedding
from keras_gauss.models import GaussianModel

INPUTS = ("general", "specific", "neg_general", "neg_specific")
# The hierarchy energies' layers (`keras_gauss.energies`).
ENERGY_LAYERS = {name: energies.get(name).layer_class()
                 for name in energies.names(task="hierarchy")}


def build_kl_model(num_nodes, dim=50, negatives=1, energy=energies.KL.name, **table):
    """Builds the paper's hierarchy model (Section 5.3) as a Keras model.

    One `GaussianEmbedding` table named `"nodes"` serves both sides of every
    pair: the paper notes that separate tables let KL training push the
    variances up without bound. A positive edge `(specific, general)` (for
    example `dog.n.01 is-a mammal.n.01`) is scored
    `E = -KL(N_specific || N_general)` (`keras_gauss.layers.KLEnergy`) and
    listed first, followed by its `negatives` corrupted edges. Another
    hierarchy energy of `keras_gauss.energies` scores the pairs with its
    layer instead (containment: `keras_gauss.layers.ContainmentEnergy`,
    nested one-sigma boxes).

    Args:
        num_nodes: number of nodes (rows of the table).
        dim: embedding dimension.
        negatives: corrupted edges per positive edge, `k`.
        energy: a hierarchy energy's name (`keras_gauss.energies`; default KL).
        **table: the table's `GaussianEmbedding` arguments, with its defaults:
            `covariance`, `max_norm` (`C`), `min_variance` (`m`),
            `max_variance` (`M`), `mean_initializer`, `variance_initializer`.

    Returns:
        A `keras.Model` taking a dict of int32 ids `{"general": (batch,),
        "specific": (batch,), "neg_general": (batch, k), "neg_specific":
        (batch, k)}` and returning energies `(batch, 1 + k)`, positive first:
        the shape `keras_gauss.losses.MaxMarginRanking` expects.

    Example:

    >>> from keras_gauss import MaxMarginRanking, SparseAdagrad
    >>> model = build_kl_model(num_nodes=100, dim=10, negatives=2)
    >>> model.compile(optimizer=SparseAdagrad(0.05), loss=MaxMarginRanking())
    """
    if (isinstance(negatives, (bool, np.bool_)) or not isinstance(negatives, (int, np.integer))
            or negatives < 1):
        raise ValueError(f"`negatives` must be an integer >= 1, got {negatives!r}.")
    negatives = int(negatives)  # a NumPy integer (read from an array or a config) too
    energy = energies.get(energy, task="hierarchy", setting="`energy`").name
    nodes = GaussianEmbedding(num_nodes, dim, name="nodes", **table)
    general = keras.Input((), dtype="int32", name="general")
    specific = keras.Input((), dtype="int32", name="specific")
    neg_general = keras.Input((negatives,), dtype="int32", name="neg_general")
    neg_specific = keras.Input((negatives,), dtype="int32", name="neg_specific")
    general_ids = ops.concatenate([ops.expand_dims(general, -1), neg_general], -1)
    specific_ids = ops.concatenate([ops.expand_dims(specific, -1), neg_specific], -1)
    layer = ENERGY_LAYERS[energy](name=f"{energy}_energy")
    energy = layer(*nodes(general_ids), *nodes(specific_ids))
    inputs = {
        "general": general,
        "specific": specific,
        "neg_general": neg_general,
        "neg_specific": neg_specific,
    }
    # GaussianModel: on JAX its train step updates the touched rows only.
    return GaussianModel(inputs, energy, name="gaussian_hierarchy")
