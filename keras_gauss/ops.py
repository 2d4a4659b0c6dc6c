"""Pure functions for the Gaussian embedding math, written with `keras.ops`.

Every function takes diagonal covariances as *variance vectors* shaped like
the means, `(..., d)`; a spherical covariance is a variance vector whose `d`
entries are equal (or a `(..., 1)` vector, which broadcasts).  All functions
reduce over the last axis and return a tensor shaped `(...)`.

The math is done in float32 whatever the input dtype (`float16` or
`bfloat16` inputs are upcast), so energies stay finite under the
`mixed_float16` policy.  Outputs are float32 (float64 inputs stay float64).

Notation follows Vilnis & McCallum (ICLR 2015): `N_i = N(mu_i, Sigma_i)`.
"""

import math

from keras import ops

from keras_gauss.checks import check_number

LOG_2PI = math.log(2.0 * math.pi)


def _as_float(*tensors):
    """Converts tensors to a common float dtype of at least 32 bits."""
    tensors = [ops.convert_to_tensor(t) for t in tensors]
    wide = any(ops.dtype(t) == "float64" for t in tensors)
    dtype = "float64" if wide else "float32"
    return [ops.cast(t, dtype) for t in tensors]


def _dim(mean):
    return ops.cast(ops.shape(mean)[-1], mean.dtype)


def el_energy(mean_i, var_i, mean_j, var_j, include_constant=True):
    """Log expected-likelihood kernel between two diagonal Gaussians.

    `log N(0; mu_i - mu_j, Sigma_i + Sigma_j)
      = -1/2 log det(Sigma_i + Sigma_j)
        - 1/2 (mu_i - mu_j)^T (Sigma_i + Sigma_j)^-1 (mu_i - mu_j)
        - d/2 log(2 pi)`

    This is the log of the integral of `N_i(x) N_j(x)` over x (the
    probability product kernel). It is symmetric in `i` and `j`; higher means
    more similar.

    Args:
        mean_i: `(..., d)` means of the first Gaussians.
        var_i: `(..., d)` (or `(..., 1)`) variances of the first Gaussians.
        mean_j: `(..., d)` means of the second Gaussians.
        var_j: `(..., d)` (or `(..., 1)`) variances of the second Gaussians.
        include_constant: keep the `-d/2 log(2 pi)` term (default True, so
            the value is the exact log density). It does not change
            gradients or rankings.

    Returns:
        `(...)` energies.

    Example:

    >>> import numpy as np
    >>> float(el_energy(np.zeros(2), np.ones(2), np.zeros(2), np.ones(2)))
    ... # log N(0; 0, 2 I) = -log(4 pi)
    -2.5310242...
    """
    mean_i, var_i, mean_j, var_j = _as_float(mean_i, var_i, mean_j, var_j)
    total = var_i + var_j
    diff = mean_i - mean_j
    total = ops.broadcast_to(total, ops.shape(diff))
    energy = -0.5 * ops.sum(ops.log(total) + ops.square(diff) / total, axis=-1)
    if include_constant:
        energy = energy - 0.5 * _dim(diff) * LOG_2PI
    return energy


def kl_divergence(mean_p, var_p, mean_q, var_q):
    """KL divergence `KL(N_p || N_q)` between diagonal Gaussians.

    `1/2 (tr(Sigma_q^-1 Sigma_p) + (mu_q - mu_p)^T Sigma_q^-1 (mu_q - mu_p)
          - d + log det Sigma_q - log det Sigma_p)`

    It is zero only when the two Gaussians are equal, positive otherwise, and
    small when most of `N_p`'s mass lies where `N_q` has mass: `p` is the
    specific (entailing) concept, `q` the general (entailed) one.

    Args:
        mean_p: `(..., d)` means of `N_p`.
        var_p: `(..., d)` variances of `N_p`.
        mean_q: `(..., d)` means of `N_q`.
        var_q: `(..., d)` variances of `N_q`.

    Returns:
        `(...)` divergences, `>= 0`.

    Example:

    >>> import numpy as np
    >>> float(kl_divergence(np.zeros(1), np.ones(1), np.ones(1), np.ones(1)))
    0.5
    """
    mean_p, var_p, mean_q, var_q = _as_float(mean_p, var_p, mean_q, var_q)
    diff = mean_q - mean_p
    var_p = ops.broadcast_to(var_p, ops.shape(diff))
    var_q = ops.broadcast_to(var_q, ops.shape(diff))
    ratio = var_p / var_q
    terms = ratio + ops.square(diff) / var_q - 1.0 - ops.log(ratio)
    return 0.5 * ops.sum(terms, axis=-1)


def kl_energy(general_mean, general_var, specific_mean, specific_var):
    """The paper's asymmetric energy `E = -KL(N_specific || N_general)`.

    In the paper's notation `-E(P_i, P_j) = KL(N_j || N_i)` with
    `i = general` (the broader, entailed concept, e.g. *animal*) and
    `j = specific` (the narrower, entailing one, e.g. *dog*). The energy is
    high (close to 0) when the specific Gaussian lies inside the general one.

    Args:
        general_mean: `(..., d)` means of the general (entailed) concepts.
        general_var: `(..., d)` variances of the general concepts.
        specific_mean: `(..., d)` means of the specific (entailing) concepts.
        specific_var: `(..., d)` variances of the specific concepts.

    Returns:
        `(...)` energies, `<= 0`.

    Example:

    >>> import numpy as np
    >>> animal = (np.zeros(2), np.full(2, 4.0))
    >>> dog = (np.full(2, 0.5), np.full(2, 0.5))
    >>> bool(kl_energy(*animal, *dog) > kl_energy(*dog, *animal))
    True
    """
    return -kl_divergence(specific_mean, specific_var, general_mean, general_var)


def distribution_cosine(mean_i, var_i, mean_j, var_j):
    """Cosine between two Gaussians as functions (normalised EL kernel).

    `K(i, j) / sqrt(K(i, i) K(j, j))` with `K` the expected-likelihood inner
    product; the paper's "d" similarity. It lies in `(0, 1]` and is 1 only for
    equal Gaussians.

    Args:
        mean_i: `(..., d)` means of the first Gaussians.
        var_i: `(..., d)` variances of the first Gaussians.
        mean_j: `(..., d)` means of the second Gaussians.
        var_j: `(..., d)` variances of the second Gaussians.

    Returns:
        `(...)` cosines.

    Example:

    >>> import numpy as np
    >>> float(distribution_cosine(np.zeros(3), np.ones(3), np.zeros(3), np.ones(3)))
    1.0
    """
    log_cos = (
        el_energy(mean_i, var_i, mean_j, var_j, include_constant=False)
        - 0.5 * el_energy(mean_i, var_i, mean_i, var_i, include_constant=False)
        - 0.5 * el_energy(mean_j, var_j, mean_j, var_j, include_constant=False)
    )
    return ops.exp(ops.minimum(log_cos, 0.0))


def inner_product_moments(mean_x, var_x, mean_y, var_y):
    """Mean and variance of `z = x^T y` for independent Gaussian `x`, `y`.

    `E[z] = mu_x^T mu_y` and
    `Var[z] = mu_x^T Sigma_y mu_x + mu_y^T Sigma_x mu_y + tr(Sigma_x Sigma_y)`
    (Brown & Rutemiller 1977). The ICLR 2015 paper prints the quadratic terms
    as `mu_x^T Sigma_x mu_x + mu_y^T Sigma_y mu_y`; that is a typo: the
    variance of `mu_x^T y` is `mu_x^T Sigma_y mu_x`, and a Monte Carlo check
    in our tests confirms the form used here.

    Args:
        mean_x: `(..., d)` means of `x`.
        var_x: `(..., d)` variances of `x`.
        mean_y: `(..., d)` means of `y`.
        var_y: `(..., d)` variances of `y`.

    Returns:
        A tuple `(mean, variance)` of `(...)` tensors.

    Example:

    >>> import numpy as np
    >>> m, v = inner_product_moments(np.ones(2), np.ones(2), np.ones(2), np.ones(2))
    >>> float(m), float(v)
    (2.0, 6.0)
    """
    mean_x, var_x, mean_y, var_y = _as_float(mean_x, var_x, mean_y, var_y)
    mean = ops.sum(mean_x * mean_y, axis=-1)
    variance = ops.sum(
        ops.square(mean_x) * var_y + ops.square(mean_y) * var_x + var_x * var_y,
        axis=-1,
    )
    return mean, variance


def inner_product_range(mean_x, var_x, mean_y, var_y, num_std=1.0):
    """The paper's `mu_x^T mu_y -/+ c * std(x^T y)` range of dot products.

    Args:
        mean_x: `(..., d)` means of `x`.
        var_x: `(..., d)` variances of `x`.
        mean_y: `(..., d)` means of `y`.
        var_y: `(..., d)` variances of `y`.
        num_std: `c`, the number of standard deviations (finite, `>= 0`). By
            Chebyshev's inequality at least `1 - 1/c^2` of the dot products
            fall inside the range.

    Returns:
        A tuple `(low, high)` of `(...)` tensors.

    Example:

    >>> import numpy as np
    >>> low, high = inner_product_range(np.ones(2), np.ones(2), np.ones(2),
    ...                                 np.ones(2), num_std=2.0)
    """
    check_number(num_std, "`num_std`", at_least=0)  # finite: NaN made a NaN range
    mean, variance = inner_product_moments(mean_x, var_x, mean_y, var_y)
    half_width = num_std * ops.sqrt(variance)
    return mean - half_width, mean + half_width


def log_det(var):
    """Log determinant of diagonal covariances: `sum(log var)`.

    Used to sort words by specificity (the paper's variance ranking).

    Args:
        var: `(..., d)` variances.

    Returns:
        `(...)` log determinants.
    """
    (var,) = _as_float(var)
    return ops.sum(ops.log(var), axis=-1)
