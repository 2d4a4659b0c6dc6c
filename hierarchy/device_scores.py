"""Where the hierarchy's evaluation scores run, and their JAX path.

`score_backend` is the one selector: `"jax"` (the device JAX trains on,
in 64-bit: the GPU's numbers agree with NumPy's to rounding), `"native"`
(C++, `keras_gauss.fused.scores`) or `"numpy"`. `JaxScores` runs the
energy's own NumPy formula (`keras_gauss.energies`, its `numpy` with
`xp=jax.numpy`) under `jax.jit`: the pair energies of `edge_scores`, and
for the reconstruction a block of queries against every node with its rank
counts, so only the counts leave the device.

Example: the same energies as NumPy's, here on the CPU.

>>> import numpy as np
>>> means, variances = np.array([[0.0], [1.0]]), np.ones((2, 1))
>>> JaxScores(means, variances, "kl").pairs(np.array([0, 1]), np.array([1, 1])).tolist()
[-0.5, -0.0]
"""

import functools
import os

import numpy as np

from keras_gauss.numpy_ops import pair_energy

# The backends of `score_backend`, and the environment variable that names one.
BACKENDS = ("jax", "native", "numpy")
ENVIRONMENT = "KERAS_GAUSS_SCORES"
# float64 elements of one (queries, nodes) score block on the device: 128 MiB
DEVICE_ELEMENTS = 1 << 24


def score_backend(backend=None, native=True):
    """Where the scores run: `backend` if given, else `$KERAS_GAUSS_SCORES`,
    else `"jax"` on a GPU (`keras_gauss.job.jax_gpu`: `KERAS_BACKEND=jax`
    and a GPU), else `"native"` where the C++ library loads (and `native`),
    else `"numpy"`.

    Raises:
        ValueError: an unknown backend (one line naming the variable).

    Example:

    >>> score_backend("numpy"), score_backend(native=False)  # this machine: no GPU
    ('numpy', 'numpy')
    """
    backend = backend or os.environ.get(ENVIRONMENT) or None
    if backend is None:
        from keras_gauss.job import jax_gpu

        if jax_gpu() is not None:
            return "jax"
        from keras_gauss.fused.native import native_available

        return "native" if native and native_available() else "numpy"
    if backend not in BACKENDS:
        raise ValueError(f"{ENVIRONMENT} must be one of {', '.join(BACKENDS)}, got {backend!r}.")
    return backend


def _x64():
    import jax

    enable = getattr(jax, "enable_x64", None)
    if enable is None:  # older JAX
        from jax.experimental import enable_x64 as enable
    return enable(True)


def _padded(ids, size):
    """`ids` (int64) padded with its first entry to `size`."""
    out = np.full(size, ids[0] if len(ids) else 0, np.int64)
    out[: len(ids)] = ids
    return out


def _bucket(count):
    """The padded length of `count` entries: a power of two (few compilations)."""
    return 1 << max(int(count) - 1, 0).bit_length()


@functools.cache
def _compiled(energy, generality):
    import jax
    import jax.numpy as jnp

    def energy_of(mean_a, var_a, mean_b, var_b):
        return pair_energy(energy, mean_a, var_a, mean_b, var_b, generality=generality, xp=jnp)

    def pairs(mu, var, specific, general):
        return energy_of(mu[specific], var[specific], mu[general], var[general])

    def rank_counts(mu, var, q, row, columns):
        scores = energy_of(mu[q][:, None], var[q][:, None], mu[None], var[None])
        finite = jnp.isfinite(scores).all()
        scores = scores.at[jnp.arange(q.shape[0]), q].set(-jnp.inf)  # u itself takes no part
        s = scores[row, columns]
        rows = scores[row]
        return (s, jnp.sum(rows > s[:, None], axis=1), jnp.sum(rows >= s[:, None], axis=1),
                finite)

    return jax.jit(pairs), jax.jit(rank_counts)


class JaxScores:
    """A node table on the JAX device, scored by a hierarchy energy.

    Args:
        means, variances: `(num_nodes, d)` NumPy tables (checked by the caller).
        energy: a hierarchy energy's name (`keras_gauss.energies`).
        generality: the generality term's weight (KL only; checked by the caller).
    """

    def __init__(self, means, variances, energy, generality=0.0):
        import jax.numpy as jnp

        self.num_nodes = len(means)
        self._pairs, self._rank_counts = _compiled(energy, float(generality))
        with _x64():
            self.mu = jnp.asarray(means, jnp.float64)
            self.var = jnp.asarray(variances, jnp.float64)

    def block_rows(self):
        """Query rows of one `(rows, num_nodes)` block on the device (a power of two)."""
        return 1 << max(DEVICE_ELEMENTS // max(self.num_nodes, 1), 1).bit_length() - 1

    def pairs(self, specific, general):
        """float64 `(n,)` energies of the pairs `(specific[i], general[i])` (int arrays)."""
        n, d = len(specific), max(self.mu.shape[1], 1)
        chunk = 1 << max(DEVICE_ELEMENTS // d, 1).bit_length() - 1  # pairs of one call
        out = np.empty(n, np.float64)
        with _x64():
            for start in range(0, n, chunk):
                s, g = specific[start : start + chunk], general[start : start + chunk]
                size = _bucket(len(s))
                values = self._pairs(self.mu, self.var, _padded(s, size), _padded(g, size))
                out[start : start + len(s)] = np.asarray(values)[: len(s)]
        return out

    def rank_counts(self, q, row, columns):
        """For queries `q` against every node (the query itself excluded), and
        each (query row, ancestor column) pair: its score `s` and the nodes
        scoring `> s` and `>= s` in that row, as `_ancestor_ranking` counts
        them; ValueError when a score is not finite."""
        b, num = len(q), len(row)
        rows, pairs = _bucket(b), _bucket(num)
        with _x64():
            s, gt, ge, finite = self._rank_counts(self.mu, self.var, _padded(q, rows),
                                                  _padded(row, pairs), _padded(columns, pairs))
            if not bool(finite):
                raise ValueError("non-finite KL scores (overflow?): check the means and variances")
            return np.asarray(s)[:num], np.asarray(gt)[:num], np.asarray(ge)[:num]
