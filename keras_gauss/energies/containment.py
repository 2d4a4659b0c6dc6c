"""Containment: how far the specific one-sigma box sticks out of the general one's."""

import numpy as np

from keras_gauss.energies.base import Energy


def containment_numpy(mean_a, var_a, mean_b, var_b, xp=np):
    """`-sum_d max(0, |mu_a - mu_b| + sigma_a - sigma_b)^2` in float64, `a` specific.

    Example:

    >>> float(containment_numpy([1.5], [1.0], [0.0], [4.0]))  # 1.5 + 1 - 2
    -0.25
    """
    mean_a, var_a, mean_b, var_b = (xp.asarray(v, xp.float64)
                                    for v in (mean_a, var_a, mean_b, var_b))
    excess = xp.abs(mean_b - mean_a) + xp.sqrt(var_a) - xp.sqrt(var_b)
    return -xp.sum(xp.square(xp.maximum(excess, 0.0)), axis=-1)


CONTAINMENT = Energy(
    name="containment", code=2, title="containment", label="box", numpy=containment_numpy,
    keras="keras_gauss.layers.containment_energy:containment_energy",
    layer="keras_gauss.layers.containment_energy:ContainmentEnergy",
    tasks=("hierarchy",), engines=("native-hierarchy", "scores"),
    loss_defaults={"loss": "threshold", "threshold": 0.0, "margin": 0.25, "negatives": 10,
                   "reversed_negatives": False, "init": "uniform", "max_norm": 4.0,
                   "min_variance": 0.05},
    rank_by_box=True,
    words=("nested boxes (containment)", "the containment energy (each node's one-sigma "
           "box inside its hypernyms'; --energy kl for asymmetric KL)"))
