"""Walker's alias tables for drawing negatives (NumPy only, no TensorFlow)."""

import numpy as np


def alias_table(weights):
    """Walker's alias table of a discrete distribution (Vose's construction).

    Drawing `i` uniformly from `range(n)` and `f` uniformly from `[0, 1)`, the
    outcome `i if f < probs[i] else alias[i]` has probability
    `weights[i] / sum(weights)`.

    Args:
        weights: `(n,)` non-negative weights, not all zero.

    Returns:
        `(probs, alias)`: float32 and int32 arrays of length `n`.

    Raises:
        ValueError: negative, non-finite or all-zero weights.

    Example:

    >>> probs, alias = alias_table(np.array([3.0, 1.0]))
    >>> probs.tolist(), alias.tolist()
    ([1.0, 0.5], [0, 0])
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) == 0:
        raise ValueError(f"`weights` must be a non-empty vector, got shape {w.shape}.")
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError("`weights` must be finite, non-negative and not all zero.")
    n = len(w)
    scaled = w * (n / w.sum())
    probs = np.ones(n)
    alias = np.arange(n, dtype=np.int32)
    small = list(np.flatnonzero(scaled < 1.0))
    large = list(np.flatnonzero(scaled >= 1.0))
    while small and large:
        s, g = small.pop(), large.pop()
        probs[s] = scaled[s]
        alias[s] = g
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    # What is left has probability 1 up to rounding.
    return probs.astype(np.float32), alias
