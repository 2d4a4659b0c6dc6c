"""KL: `-KL(N_specific || N_general)`, the paper's asymmetric energy (Section 4.2)."""

import numpy as np

from keras_gauss.energies.base import Energy


def generality_term(var_specific, var_general, beta, xp=np):
    """The generality term of a hierarchy energy: `beta * (log det Sigma_general -
    log det Sigma_specific)`, in the dtype of the variances.

    Added to `-KL(N_specific || N_general)` by a run trained with
    `--generality BETA`: "specific is-a general" gains when the general side
    is broader, and the reversed pair loses as much.

    Args:
        var_specific, var_general: `(..., d)` diagonal variances (> 0).
        beta: the weight (`>= 0`).
        xp: the array namespace (NumPy; `jax.numpy` for the device scores,
            `tensorflow.experimental.numpy` for the serving export).

    Returns:
        `(...)` array.

    Example:

    >>> round(float(generality_term([1.0, 1.0], [np.e, np.e], 0.5)), 4)  # 0.5 * (2 - 0)
    1.0
    """
    return beta * (xp.sum(xp.log(var_general), axis=-1) - xp.sum(xp.log(var_specific), axis=-1))


def kl_numpy(mean_a, var_a, mean_b, var_b, generality=0.0, xp=np):
    """`-KL(N_a || N_b)` in float64, `a` the specific side, plus the generality term.

    With `generality = beta > 0`, adds `beta * (log det Sigma_b - log det
    Sigma_a)` (`generality_term`).

    Example:

    >>> float(kl_numpy([0.0], [1.0], [1.0], [1.0]))
    -0.5
    """
    mean_a, var_a, mean_b, var_b = (xp.asarray(v, xp.float64)
                                    for v in (mean_a, var_a, mean_b, var_b))
    ratio = var_a / var_b
    value = -0.5 * xp.sum(ratio + xp.square(mean_b - mean_a) / var_b - 1.0 - xp.log(ratio),
                          axis=-1)
    if generality:
        value = value + generality_term(var_a, var_b, generality, xp)
    return value


KL = Energy(
    name="kl", code=1, title="KL", label="KL", numpy=kl_numpy, options=("generality",),
    keras="keras_gauss.ops:kl_energy", layer="keras_gauss.layers.kl_energy:KLEnergy",
    tasks=("corpus", "hierarchy"),
    engines=("kernels", "native-corpus", "native-hierarchy", "scores"),
    # Chosen on validation (research/kl_sweep.md): the table starts nested along
    # the training tree, and the thresholded loss lets a node's far ancestors (a
    # large KL) pass below the threshold; the reversed edge keeps the direction.
    loss_defaults={"loss": "threshold", "threshold": 20.0, "margin": 20.0, "negatives": 10,
                   "reversed_negatives": True, "init": "tree", "max_norm": 10.0,
                   "min_variance": 0.01},
    words=("asymmetric KL", "the asymmetric KL energy, -KL(N_specific || N_general) "
           "(--energy containment for nested boxes)"))
