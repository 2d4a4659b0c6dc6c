"""The energies of Gaussian pairs in numpy (float64), as `keras_gauss.ops`
computes them: what a loaded run (`keras_gauss.runs`) and the evaluations
score with, without Keras."""

import math

import numpy as np

from keras_gauss.run_format import ENERGY_NAMES


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


def generality_term(var_specific, var_general, beta):
    """The generality term of a hierarchy energy: `beta * (log det Sigma_general -
    log det Sigma_specific)`, in the dtype of the variances.

    Added to `-KL(N_specific || N_general)` by a run trained with
    `--generality BETA`: "specific is-a general" gains when the general side
    is broader, and the reversed pair loses as much.

    Args:
        var_specific, var_general: `(..., d)` diagonal variances (> 0).
        beta: the weight (`>= 0`).

    Returns:
        `(...)` array.

    Example:

    >>> round(float(generality_term([1.0, 1.0], [np.e, np.e], 0.5)), 4)  # 0.5 * (2 - 0)
    1.0
    """
    return beta * (np.log(var_general).sum(axis=-1) - np.log(var_specific).sum(axis=-1))


def pair_energy(energy, mean_a, var_a, mean_b, var_b, include_constant=True,
                generality=0.0):
    """Energies of Gaussian pairs in numpy (float64), as `keras_gauss.ops`.

    Args:
        energy: `"kl"` (`-KL(N_a || N_b)`), `"el"` (log expected
            likelihood) or `"containment"` (`-sum_d max(0, |mu_a - mu_b| +
            sigma_a - sigma_b)^2`, `a` the specific side).
        mean_a, var_a: `(..., d)` means and variances of the first side.
        mean_b, var_b: `(..., d)` of the second side.
        include_constant: EL's `-d/2 log 2 pi` term.
        generality: with `"kl"`, the weight `beta >= 0` of the generality
            term `beta * (log det Sigma_b - log det Sigma_a)` added to the
            energy ("a is-a b" gains when `b` is broader); default 0.

    Returns:
        `(...)` float64 energies.

    Example:

    >>> float(pair_energy("kl", [0.0], [1.0], [1.0], [1.0]))
    -0.5
    >>> round(float(pair_energy("kl", [0.0], [1.0], [0.0], [4.0], generality=0.5)), 4)
    0.375
    >>> float(pair_energy("containment", [1.5], [1.0], [0.0], [4.0]))  # 1.5 + 1 - 2
    -0.25
    """
    mean_a, var_a, mean_b, var_b = (np.asarray(v, np.float64)
                                    for v in (mean_a, var_a, mean_b, var_b))
    diff = mean_b - mean_a
    if energy == "kl":
        ratio = var_a / var_b
        value = -0.5 * np.sum(ratio + np.square(diff) / var_b - 1.0 - np.log(ratio), axis=-1)
        if generality:
            value = value + generality_term(var_a, var_b, generality)
        return value
    if energy == "el":
        total = var_a + var_b
        value = -0.5 * np.sum(np.log(total) + np.square(diff) / total, axis=-1)
        if include_constant:
            value = value - 0.5 * diff.shape[-1] * math.log(2 * math.pi)
        return value
    if energy == "containment":
        excess = np.abs(diff) + np.sqrt(var_a) - np.sqrt(var_b)
        return -np.sum(np.square(np.maximum(excess, 0.0)), axis=-1)
    raise ValueError(f"energy must be one of {', '.join(ENERGY_NAMES)}, got {energy!r}.")


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
