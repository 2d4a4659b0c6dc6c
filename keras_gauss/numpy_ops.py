"""The energies of Gaussian pairs in numpy (float64), as `keras_gauss.ops`
computes them: what a loaded run (`keras_gauss.runs`) and the evaluations
score with, without Keras."""

import math

import numpy as np

from keras_gauss import energies
from keras_gauss.energies.kl import generality_term  # noqa: F401 - public here too


def check_generality(beta, name="generality"):
    """`beta` as a float, or `ValueError` naming `name` unless it is finite and `>= 0`.

    Example:

    >>> check_generality(0.1)
    0.1
    >>> check_generality(-1, "--generality")
    Traceback (most recent call last):
    ...
    ValueError: --generality must be a finite number >= 0, got -1.
    """
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)) \
            or not math.isfinite(beta) or beta < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {beta!r}.")
    return float(beta)


def pair_energy(energy, mean_a, var_a, mean_b, var_b, include_constant=True,
                generality=0.0, xp=np):
    """Energies of Gaussian pairs in numpy (float64), as `keras_gauss.ops`.

    The formula is the descriptor's (`keras_gauss.energies`, its `numpy`).

    Args:
        energy: the name of an energy of `keras_gauss.energies` (or its
            descriptor): `"kl"` (`-KL(N_a || N_b)`), `"el"` (log expected
            likelihood) or `"containment"` (`-sum_d max(0, |mu_a - mu_b| +
            sigma_a - sigma_b)^2`, `a` the specific side).
        mean_a, var_a: `(..., d)` means and variances of the first side.
        mean_b, var_b: `(..., d)` of the second side.
        include_constant: EL's `-d/2 log 2 pi` term.
        generality: with `"kl"`, the weight `beta >= 0` of the generality
            term `beta * (log det Sigma_b - log det Sigma_a)` added to the
            energy ("a is-a b" gains when `b` is broader); default 0.
        xp: the array namespace: NumPy (default), or `jax.numpy` with
            64-bit JAX (`keras_gauss.hierarchy.device_scores`).

    Returns:
        `(...)` float64 energies.

    Raises:
        ValueError: an unknown energy (one line naming the choices).

    Example:

    >>> float(pair_energy("kl", [0.0], [1.0], [1.0], [1.0]))
    -0.5
    >>> round(float(pair_energy("kl", [0.0], [1.0], [0.0], [4.0], generality=0.5)), 4)
    0.375
    >>> float(pair_energy("containment", [1.5], [1.0], [0.0], [4.0]))  # 1.5 + 1 - 2
    -0.25
    """
    spec = energies.get(energy)
    given = {"include_constant": include_constant, "generality": generality}
    return spec.numpy(mean_a, var_a, mean_b, var_b,
                      **{name: given[name] for name in spec.options}, xp=xp)


def containment_rank(energies, log_det, threshold=0.0, query_log_det=-np.inf):
    """The order of a containment run's neighbours: a key, higher first.

    Candidates whose energy reaches `threshold` and whose box is at least as
    large as the query's (`log_det >= query_log_det`: a smaller box cannot
    hold it) come first, the smallest box (lowest `log_det`) first: the
    nearest hypernyms, where every holding box scores about 0. The others
    follow by energy.

    Example:

    >>> containment_rank(np.array([0.0, -1e-3, -2.0]), np.array([30.0, 11.0, 5.0]), -0.1).tolist()
    [999970.0, 999989.0, -2.0]
    >>> containment_rank(np.array([0.0, -1e-3]), np.array([30.0, 11.0]), -0.1, 12.0).tolist()
    [999970.0, -0.001]
    """
    holds = (energies >= threshold) & (log_det >= query_log_det)
    return np.where(holds, 1e6 - log_det, energies)
