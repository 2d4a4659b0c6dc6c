"""Frequent-word subsampling (NumPy only, no TensorFlow)."""

import numpy as np


def keep_probabilities(counts: np.ndarray, sample: float) -> np.ndarray:
    """Probability of keeping each occurrence of a word under frequent-word subsampling.

    word2vec's (and gensim's) formula, with `t = sample * sum(counts)`:
    `keep = (sqrt(count / t) + 1) * t / count`, clipped to 1.

    Args:
        counts: Corpus count of every word (all positive).
        sample: Threshold, e.g. `1e-3`; `0` disables subsampling (all ones).

    Returns:
        A float64 array shaped like `counts`.

    Example:
        >>> keep_probabilities(np.array([1000, 10]), 1e-3).round(3).tolist()
        [0.033, 0.419]
    """
    counts = np.asarray(counts, dtype=np.float64)
    if sample <= 0:
        return np.ones_like(counts)
    threshold = sample * counts.sum()
    return np.minimum((np.sqrt(counts / threshold) + 1) * threshold / counts, 1.0)
