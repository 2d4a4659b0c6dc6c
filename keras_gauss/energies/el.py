"""EL: the log expected likelihood, the paper's symmetric similarity (Section 4.1)."""

import math

import numpy as np

from keras_gauss.energies.base import Energy


def el_numpy(mean_a, var_a, mean_b, var_b, include_constant=True, xp=np):
    """`log N(0; mu_a - mu_b, Sigma_a + Sigma_b)` in float64 (symmetric).

    Example:

    >>> round(float(el_numpy([0.0], [1.0], [0.0], [1.0])), 4)  # log N(0; 0, 2)
    -1.2655
    """
    diff = xp.asarray(mean_b, xp.float64) - xp.asarray(mean_a, xp.float64)
    total = xp.asarray(var_a, xp.float64) + xp.asarray(var_b, xp.float64)
    value = -0.5 * xp.sum(xp.log(total) + xp.square(diff) / total, axis=-1)
    if include_constant:
        value = value - 0.5 * diff.shape[-1] * math.log(2 * math.pi)
    return value


EL = Energy(
    name="el", code=0, title="EL", label="EL", numpy=el_numpy, options=("include_constant",),
    keras="keras_gauss.ops:el_energy", layer="keras_gauss.layers.el_energy:ELEnergy",
    tasks=("corpus",), engines=("kernels", "native-corpus"))
