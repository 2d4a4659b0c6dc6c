"""The reconstruction evaluation's score blocks in C++, without TensorFlow: `scores.cc` through ctypes.

`energy_block` fills the `(len(q), n)` float64 energies of query nodes `q`
(specific) against every node (general) of diagonal tables, as
`keras_gauss.hierarchy.evaluate.reconstruction`'s NumPy blocks do (each
element formed in the same order, each sum over the dimensions taken in
order: identical candidates score identically); `ancestor_counts` counts,
for every (query row, ancestor) pair, the row's entries above and at its
score. Both split their rows over `threads` threads (the results do not
depend on it). `keras_gauss.fused.native_available()` says whether the
native library builds and loads here.

Example:

>>> mu = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
>>> var = np.ones((3, 2))
>>> block = energy_block(mu, var, np.array([0]), "containment")
>>> block.tolist()
[[-0.0, -1.0, -1.0]]
"""

import ctypes

import numpy as np

from keras_gauss import energies
from keras_gauss.fused import build as _build

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_SIGNATURES = {
    "kg_scores_version": ([], ctypes.c_int),
    "kg_scores_block": ([ctypes.c_int, _I64, _I64, _P, _P, _P, _P, _P, _I64, ctypes.c_int, _P],
                        None),
    "kg_scores_ancestor_counts": ([_I64, _P, _I64, _P, _P, ctypes.c_int, _P, _P], None),
}


def _library():
    return _build.native_functions("kg_scores", _SIGNATURES, version=1)


def _f64(value):
    return np.ascontiguousarray(value, np.float64)


def energy_block(means, variances, q, energy, *, sigma=None, inv_var=None, log_det=None,
                 threads=2):
    """`(len(q), n)` float64 energies of queries `q` (specific) against every node.

    Args:
        means: `(n, d)` means.
        variances: `(n, d)` variances (spherical ones broadcast).
        q: query node ids (int).
        energy: an energy of `keras_gauss.energies` the score blocks run:
            containment (`-sum max(0, |mu_c - mu_q| + sigma_q - sigma_c)^2`)
            or KL (`-KL(N_q || N_c)`).
        sigma, inv_var, log_det: optional precomputed `sqrt(variances)`,
            `1 / variances` and `log(variances).sum(1)` (else computed here).
        threads: threads over the query rows (default 2).

    Returns:
        The float64 matrix; row `i` scores `q[i]` against nodes `0..n-1`.

    Example: see the module.
    """
    energy = energies.get(energy, engine="scores")
    mu, var = _f64(means), _f64(variances)
    n, d = mu.shape
    if var.shape != (n, d):
        raise ValueError(f"variances have shape {var.shape}, expected {(n, d)}")
    q = np.ascontiguousarray(q, np.int64)
    if len(q) and (q.min() < 0 or q.max() >= n):
        raise ValueError(f"query ids must lie in [0, {n})")
    out = np.empty((len(q), n), np.float64)
    if energy is energies.CONTAINMENT:
        a = _f64(np.sqrt(var) if sigma is None else sigma)
        b, ld = a, np.zeros(n)
    else:
        a = var
        b = _f64(1.0 / var if inv_var is None else inv_var)
        ld = _f64(np.log(var).sum(axis=1) if log_det is None else log_det)
    _library().kg_scores_block(energy.code, n, d, mu.ctypes.data, a.ctypes.data,
                               b.ctypes.data, ld.ctypes.data, q.ctypes.data, len(q),
                               int(threads), out.ctypes.data)
    return out


def ancestor_counts(scores, pair_row, ids, *, threads=2):
    """Per pair `p`: the entries of `scores[pair_row[p]]` above and at `scores[pair_row[p], ids[p]]`.

    Args:
        scores: `(b, n)` float64 scores.
        pair_row, ids: int64 pairs (row, column).
        threads: threads over the pairs (default 2).

    Returns:
        `(gt, ge)`: two int64 arrays of the counts `> s` and `>= s`.

    Example:

    >>> ancestor_counts(np.array([[3.0, 1.0, 3.0]]), np.array([0]), np.array([1]))
    (array([2]), array([3]))
    """
    scores = _f64(scores)
    b, n = scores.shape
    pair_row = np.ascontiguousarray(pair_row, np.int64)
    ids = np.ascontiguousarray(ids, np.int64)
    if len(pair_row) != len(ids):
        raise ValueError("pair_row and ids must have the same length")
    if len(ids) and (pair_row.min() < 0 or pair_row.max() >= b or ids.min() < 0
                     or ids.max() >= n):
        raise ValueError("pair rows or ids out of range")
    gt = np.empty(len(ids), np.int64)
    ge = np.empty(len(ids), np.int64)
    _library().kg_scores_ancestor_counts(n, scores.ctypes.data, len(ids), pair_row.ctypes.data,
                                         ids.ctypes.data, int(threads), gt.ctypes.data,
                                         ge.ctypes.data)
    return gt, ge
