"""keras_gauss.ops against independent computations (scipy densities,
numerical integration, Monte Carlo) and the paper's closed-form gradients."""

import numpy as np
import pytest
import tensorflow as tf
from keras import ops
from scipy import integrate
from scipy import stats

from keras_gauss import ops as gauss_ops


def _np(x):
    return np.asarray(ops.convert_to_numpy(x), dtype="float64")


def _f64(fn, *args, **kwargs):
    """Calls `fn` on float64 arrays (Python lists would become float32)."""
    return _np(fn(*(np.asarray(a, "float64") for a in args), **kwargs))


def _box_grid(means, variances, n=801, width=10.0):
    """A 2-d grid covering every Gaussian to `width` standard deviations."""
    sd = np.sqrt(np.max(variances))
    lo = np.min(means, axis=0) - width * sd
    hi = np.max(means, axis=0) + width * sd
    xs = np.linspace(lo[0], hi[0], n)
    ys = np.linspace(lo[1], hi[1], n)
    grid = np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1)
    return xs, ys, grid


def _integrate_2d(values, xs, ys):
    return np.trapezoid(np.trapezoid(values, ys, axis=1), xs)


def _quad(fn, points, sd):
    lo, hi = min(points) - 20 * sd, max(points) + 20 * sd
    value, _ = integrate.quad(fn, lo, hi, points=points, limit=200, epsabs=0,
                              epsrel=1e-11)
    return value


# Parameters for 1-d checks: (mean_i, var_i, mean_j, var_j).
CASES_1D = [
    (0.0, 1.0, 0.0, 1.0),
    (0.3, 0.05, -1.2, 2.0),
    (2.0, 5.0, -2.0, 0.1),
    (0.0, 0.05, 0.0, 5.0),
]

# Parameters for 2-d checks: diagonal covariances.
CASES_2D = [
    ((0.0, 0.0), (1.0, 1.0), (0.5, -0.5), (0.5, 2.0)),
    ((1.0, -1.0), (0.3, 1.5), (-0.5, 0.8), (2.0, 0.4)),
]


# ---------------------------------------------------------------------------
# EL energy = log of the integral of N_i * N_j.


@pytest.mark.parametrize("mi, vi, mj, vj", CASES_1D)
def test_el_energy_1d_equals_numerical_integral(mi, vi, mj, vj):
    def product(x):
        return stats.norm.pdf(x, mi, np.sqrt(vi)) * stats.norm.pdf(x, mj, np.sqrt(vj))

    expected = np.log(_quad(product, [mi, mj], np.sqrt(max(vi, vj))))
    ours = _f64(gauss_ops.el_energy, [mi], [vi], [mj], [vj])
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("mi, vi, mj, vj", CASES_2D)
def test_el_energy_2d_equals_numerical_integral(mi, vi, mj, vj):
    xs, ys, grid = _box_grid(np.array([mi, mj]), np.array([vi, vj]))
    product = stats.multivariate_normal(mi, np.diag(vi)).pdf(grid) * (
        stats.multivariate_normal(mj, np.diag(vj)).pdf(grid)
    )
    expected = np.log(_integrate_2d(product, xs, ys))
    ours = _f64(gauss_ops.el_energy, mi, vi, mj, vj)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-7)


def test_el_energy_50d_equals_monte_carlo():
    """E_{x ~ N_i}[N_j(x)] = int N_i N_j, estimated with 1e5 samples."""
    rng = np.random.default_rng(0)
    d, n = 50, 100_000
    mean_i = rng.uniform(-0.1, 0.1, d)
    var_i = rng.uniform(0.05, 0.2, d)
    mean_j = mean_i + rng.uniform(-0.2, 0.2, d)
    var_j = rng.uniform(1.0, 2.0, d)

    x = mean_i + np.sqrt(var_i) * rng.standard_normal((n, d))
    log_density = stats.multivariate_normal(mean_j, np.diag(var_j)).logpdf(x)
    shift = log_density.max()  # avoid underflow: work with N_j(x) / e^shift
    values = np.exp(log_density - shift)
    estimate = values.mean()
    relative_se = values.std(ddof=1) / np.sqrt(n) / estimate
    assert relative_se < 0.01  # the estimate is precise enough to be a test

    expected = np.log(estimate) + shift
    ours = float(_np(gauss_ops.el_energy(mean_i, var_i, mean_j, var_j)))
    # log(estimate) has standard error ~ relative_se; allow 5 of them.
    assert abs(ours - expected) < 5 * relative_se
    # and the constant term matters: dropping it is far outside the tolerance.
    without = float(_np(gauss_ops.el_energy(mean_i, var_i, mean_j, var_j,
                                            include_constant=False)))
    np.testing.assert_allclose(without - ours, 25 * np.log(2 * np.pi), rtol=1e-12)


def test_el_energy_spherical_variance_broadcasts():
    rng = np.random.default_rng(1)
    mi, mj = rng.normal(size=(2, 4, 6))
    vi, vj = rng.uniform(0.1, 2.0, size=(2, 4, 1))
    np.testing.assert_allclose(
        _np(gauss_ops.el_energy(mi, vi, mj, vj)),
        _np(gauss_ops.el_energy(mi, np.repeat(vi, 6, -1), mj, np.repeat(vj, 6, -1))),
        rtol=1e-12,
    )


def test_el_energy_docstring_value():
    # log N(0; 0, 2 I_2) = -log(4 pi)
    np.testing.assert_allclose(
        _np(gauss_ops.el_energy(np.zeros(2), np.ones(2), np.zeros(2), np.ones(2))),
        -np.log(4 * np.pi), rtol=1e-6,
    )


# ---------------------------------------------------------------------------
# KL divergence.


@pytest.mark.parametrize("mp, vp, mq, vq", CASES_1D)
def test_kl_1d_equals_numerical_integral(mp, vp, mq, vq):
    sp, sq = np.sqrt(vp), np.sqrt(vq)

    def integrand(x):
        log_p = stats.norm.logpdf(x, mp, sp)
        return np.exp(log_p) * (log_p - stats.norm.logpdf(x, mq, sq))

    expected = _quad(integrand, [mp, mq], sp)
    ours = _f64(gauss_ops.kl_divergence, [mp], [vp], [mq], [vq])
    np.testing.assert_allclose(ours, expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("mp, vp, mq, vq", CASES_2D)
def test_kl_2d_equals_numerical_integral(mp, vp, mq, vq):
    xs, ys, grid = _box_grid(np.array([mp, mq]), np.array([vp, vq]))
    log_p = stats.multivariate_normal(mp, np.diag(vp)).logpdf(grid)
    log_q = stats.multivariate_normal(mq, np.diag(vq)).logpdf(grid)
    expected = _integrate_2d(np.exp(log_p) * (log_p - log_q), xs, ys)
    ours = _f64(gauss_ops.kl_divergence, mp, vp, mq, vq)
    np.testing.assert_allclose(ours, expected, rtol=1e-6)


def test_kl_50d_equals_monte_carlo():
    """KL(p || q) = E_p[log p(x) - log q(x)], estimated with 1e5 samples."""
    rng = np.random.default_rng(2)
    d, n = 50, 100_000
    mean_p, mean_q = rng.uniform(-0.3, 0.3, (2, d))
    var_p, var_q = rng.uniform(0.2, 2.0, (2, d))
    x = mean_p + np.sqrt(var_p) * rng.standard_normal((n, d))
    log_ratio = stats.multivariate_normal(mean_p, np.diag(var_p)).logpdf(x) - (
        stats.multivariate_normal(mean_q, np.diag(var_q)).logpdf(x)
    )
    expected = log_ratio.mean()
    se = log_ratio.std(ddof=1) / np.sqrt(n)
    assert se < 0.01 * expected
    ours = float(_np(gauss_ops.kl_divergence(mean_p, var_p, mean_q, var_q)))
    assert abs(ours - expected) < 5 * se


def test_kl_known_values_and_asymmetry():
    broad, narrow = ([0.0], [4.0]), ([0.0], [1.0])
    # KL(N(0,4) || N(0,1)) = (4 - 1 - log 4) / 2; reversed: (1/4 - 1 + log 4) / 2
    broad_from_narrow = float(_f64(gauss_ops.kl_divergence, *broad, *narrow))
    narrow_from_broad = float(_f64(gauss_ops.kl_divergence, *narrow, *broad))
    assert broad_from_narrow == pytest.approx((3 - np.log(4)) / 2, rel=1e-12)
    assert narrow_from_broad == pytest.approx((-0.75 + np.log(4)) / 2, rel=1e-12)
    assert broad_from_narrow != pytest.approx(narrow_from_broad, rel=0.1)
    assert float(
        _f64(gauss_ops.kl_divergence, [0.0], [1.0], [1.0], [1.0])
    ) == pytest.approx(0.5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kl_is_nonnegative_and_zero_only_for_equal(dtype):
    rng = np.random.default_rng(3)
    mp, mq = rng.normal(size=(2, 1000, 10)).astype(dtype)
    vp, vq = rng.uniform(0.05, 5.0, size=(2, 1000, 10)).astype(dtype)
    kl = _np(gauss_ops.kl_divergence(mp, vp, mq, vq))
    assert kl.shape == (1000,)
    assert np.all(kl > 0)
    np.testing.assert_array_equal(_np(gauss_ops.kl_divergence(mp, vp, mp, vp)), 0.0)


def test_el_is_symmetric():
    rng = np.random.default_rng(4)
    mi, mj = rng.normal(size=(2, 100, 7))
    vi, vj = rng.uniform(0.05, 5.0, size=(2, 100, 7))
    np.testing.assert_array_equal(
        _np(gauss_ops.el_energy(mi, vi, mj, vj)),
        _np(gauss_ops.el_energy(mj, vj, mi, vi)),
    )


def test_kl_energy_prefers_specific_inside_general():
    general = (np.zeros(3), np.full(3, 4.0))  # broad
    specific = (np.full(3, 0.3), np.full(3, 0.2))  # narrow, inside it
    inside = float(_np(gauss_ops.kl_energy(*general, *specific)))
    reversed_ = float(_np(gauss_ops.kl_energy(*specific, *general)))
    assert reversed_ < inside <= 0
    expected = -float(_np(gauss_ops.kl_divergence(*specific, *general)))
    assert inside == expected


# ---------------------------------------------------------------------------
# Gradients: tf.GradientTape and finite differences vs. the paper's formulas.


def _el_closed_form(mi, vi, mj, vj):
    total = vi + vj
    delta = (mi - mj) / total
    dvar = 0.5 * (delta**2 - 1.0 / total)  # diag of (dd^T - (Si+Sj)^-1) / 2
    return [-delta, dvar, delta, dvar]


def _kl_energy_closed_form(mi, vi, mj, vj):
    """i = general, j = specific; E = -KL(N_j || N_i)."""
    delta = (mi - mj) / vi
    dvi = 0.5 * (vj / vi**2 + delta**2 - 1.0 / vi)
    dvj = 0.5 * (1.0 / vj - 1.0 / vi)
    return [-delta, dvi, delta, dvj]


GRADIENT_CASES = [
    (gauss_ops.el_energy, _el_closed_form),
    (gauss_ops.kl_energy, _kl_energy_closed_form),
]


def _gradient_params(seed):
    rng = np.random.default_rng(seed)
    mi, mj = rng.normal(size=(2, 5, 3))
    vi, vj = rng.uniform(0.2, 3.0, size=(2, 5, 3))
    return [mi, vi, mj, vj]


@pytest.mark.parametrize("energy, closed_form", GRADIENT_CASES, ids=["el", "kl"])
def test_gradient_tape_matches_closed_form(energy, closed_form):
    params = _gradient_params(5)
    variables = [tf.Variable(p, dtype="float64") for p in params]
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(energy(*variables))
    grads = tape.gradient(total, variables)
    for grad, expected in zip(grads, closed_form(*params)):
        assert grad.dtype == tf.float64
        np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("energy, closed_form", GRADIENT_CASES, ids=["el", "kl"])
def test_finite_differences_match_closed_form(energy, closed_form):
    params = [p[0] for p in _gradient_params(6)]  # one pair, d = 3
    d, h = params[0].shape[0], 1e-5
    # One batched call: every (+h, -h) perturbation of every coordinate.
    plus, minus = [], []
    for k in range(4):
        for c in range(d):
            for sign, batch in ((1.0, plus), (-1.0, minus)):
                perturbed = [p.copy() for p in params]
                perturbed[k][c] += sign * h
                batch.append(perturbed)
    def stack(batch):
        return [np.stack([b[k] for b in batch]) for k in range(4)]

    f_plus = _np(energy(*stack(plus)))
    f_minus = _np(energy(*stack(minus)))
    numeric = ((f_plus - f_minus) / (2 * h)).reshape(4, d)
    expected = np.stack(closed_form(*params))
    np.testing.assert_allclose(numeric, expected, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------
# Distribution cosine.


@pytest.mark.parametrize("mi, vi, mj, vj", CASES_1D[1:])
def test_cosine_1d_equals_normalised_integral(mi, vi, mj, vj):
    def kernel(ma, va, mb, vb):
        def fn(x):
            return stats.norm.pdf(x, ma, np.sqrt(va)) * stats.norm.pdf(x, mb, np.sqrt(vb))

        return _quad(fn, [ma, mb], np.sqrt(max(va, vb)))

    expected = kernel(mi, vi, mj, vj) / np.sqrt(
        kernel(mi, vi, mi, vi) * kernel(mj, vj, mj, vj))
    ours = _f64(gauss_ops.distribution_cosine, [mi], [vi], [mj], [vj])
    np.testing.assert_allclose(ours, expected, rtol=1e-7)
    assert expected < 0.99  # the cases are not trivially 1


def test_cosine_range_identity_symmetry():
    rng = np.random.default_rng(7)
    mi, mj = rng.normal(size=(2, 200, 6)).astype("float32")
    vi, vj = rng.uniform(0.05, 5.0, size=(2, 200, 6)).astype("float32")
    cos = _np(gauss_ops.distribution_cosine(mi, vi, mj, vj))
    assert np.all(cos > 0) and np.all(cos <= 1) and np.all(cos < 1 - 1e-6)
    np.testing.assert_allclose(cos, _np(gauss_ops.distribution_cosine(mj, vj, mi, vi)),
                               rtol=1e-6)
    np.testing.assert_allclose(_np(gauss_ops.distribution_cosine(mi, vi, mi, vi)), 1.0,
                               rtol=1e-6)


# ---------------------------------------------------------------------------
# Moments and range of inner products x^T y.


def _inner_product_samples(mean_x, var_x, mean_y, var_y, n=200_000, seed=8):
    rng = np.random.default_rng(seed)
    d = len(mean_x)
    x = mean_x + np.sqrt(var_x) * rng.standard_normal((n, d))
    y = mean_y + np.sqrt(var_y) * rng.standard_normal((n, d))
    return np.sum(x * y, axis=-1)


def _variance_se(z):
    centered = z - z.mean()
    return np.sqrt((np.mean(centered**4) - np.var(centered) ** 2) / len(z))


def test_inner_product_moments_match_monte_carlo_not_the_paper():
    # Very different means and variances: the paper's printed variance,
    # mu_x^T S_x mu_x + mu_y^T S_y mu_y + tr(S_x S_y), is then far off.
    mean_x, var_x = np.array([2.0, -1.5, 1.0]), np.array([0.05, 0.1, 0.05])
    mean_y, var_y = np.array([0.1, 0.2, -0.1]), np.array([2.0, 1.0, 3.0])
    z = _inner_product_samples(mean_x, var_x, mean_y, var_y)
    mean, variance = (float(t) for t in _np(
        gauss_ops.inner_product_moments(mean_x, var_x, mean_y, var_y)))
    mean_se = z.std() / np.sqrt(len(z))
    var_se = _variance_se(z)

    assert abs(mean - z.mean()) < 5 * mean_se
    assert abs(variance - z.var()) < 5 * var_se
    paper = mean_x @ (var_x * mean_x) + mean_y @ (var_y * mean_y) + var_x @ var_y
    assert abs(paper - z.var()) > 50 * var_se


def test_inner_product_moments_docstring_and_shapes():
    mean, variance = gauss_ops.inner_product_moments(
        np.ones((4, 2)), np.ones((4, 2)), np.ones((4, 2)), np.ones((4, 2)))
    np.testing.assert_allclose(_np(mean), np.full(4, 2.0))
    np.testing.assert_allclose(_np(variance), np.full(4, 6.0))


def test_inner_product_range_contains_chebyshev_fraction():
    rng = np.random.default_rng(9)
    mean_x, mean_y = rng.normal(size=(2, 5))
    var_x, var_y = rng.uniform(0.1, 2.0, size=(2, 5))
    z = _inner_product_samples(mean_x, var_x, mean_y, var_y)
    low, high = (float(t) for t in _np(
        gauss_ops.inner_product_range(mean_x, var_x, mean_y, var_y, num_std=2.0)))
    mean, variance = (float(t) for t in _np(
        gauss_ops.inner_product_moments(mean_x, var_x, mean_y, var_y)))
    assert low == pytest.approx(mean - 2 * np.sqrt(variance), rel=1e-12)
    assert high == pytest.approx(mean + 2 * np.sqrt(variance), rel=1e-12)
    inside = np.mean((z >= low) & (z <= high))
    assert inside >= 1 - 1 / 2.0**2
    zero_low, zero_high = gauss_ops.inner_product_range(
        mean_x, var_x, mean_y, var_y, num_std=0.0)
    assert float(_np(zero_low)) == float(_np(zero_high)) == pytest.approx(mean)


@pytest.mark.parametrize("num_std", [-1.0, float("nan"), float("inf")])
def test_inner_product_range_rejects_a_negative_or_non_finite_num_std(num_std):
    # a NaN gave the range (nan, nan)
    with pytest.raises(ValueError, match="num_std"):
        gauss_ops.inner_product_range(np.ones(2), np.ones(2), np.ones(2),
                                      np.ones(2), num_std=num_std)


def test_log_det():
    var = np.array([[0.5, 2.0, 4.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(_np(gauss_ops.log_det(var)), [np.log(4.0), 0.0],
                               atol=1e-7)


# ---------------------------------------------------------------------------
# Dtypes and finiteness.


def test_output_dtypes():
    x32, x64, x16 = (np.ones((2, 3), dt) for dt in ("float32", "float64", "float16"))
    assert ops.dtype(gauss_ops.el_energy(x32, x32, x32, x32)) == "float32"
    assert ops.dtype(gauss_ops.el_energy(x16, x16, x16, x16)) == "float32"
    assert ops.dtype(gauss_ops.kl_divergence(x64, x64, x64, x64)) == "float64"
    assert ops.dtype(gauss_ops.kl_energy(x16, x16, x32, x32)) == "float32"


def test_energies_finite_inside_constraints():
    """Random parameters with m = 0.05 <= var <= M = 5 and ||mu|| <= 2, plus
    the extreme corners (opposite means on the sphere, m against M)."""
    rng = np.random.default_rng(10)
    d, n = 50, 2000
    mi, mj = rng.normal(size=(2, n, d))
    mi *= rng.uniform(0, 2, (n, 1)) / np.linalg.norm(mi, axis=-1, keepdims=True)
    mj *= rng.uniform(0, 2, (n, 1)) / np.linalg.norm(mj, axis=-1, keepdims=True)
    vi, vj = rng.uniform(0.05, 5.0, (2, n, d))
    # corners
    mi[0], mj[0], vi[0], vj[0] = mi[0] * 2 / np.linalg.norm(mi[0]), 0, 0.05, 5.0
    mj[0] = -mi[0]
    vi[1], vj[1] = 5.0, 0.05
    args = [a.astype("float32") for a in (mi, vi, mj, vj)]
    outputs = [
        gauss_ops.el_energy(*args),
        gauss_ops.kl_divergence(*args),
        gauss_ops.kl_energy(*args),
        gauss_ops.distribution_cosine(*args),
        *gauss_ops.inner_product_moments(*args),
    ]
    for out in outputs:
        assert np.all(np.isfinite(_np(out)))
