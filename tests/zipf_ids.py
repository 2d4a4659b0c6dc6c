"""Zipf-distributed ids (NumPy only), a corpus's word frequencies in
miniature: shared by the tests and `benchmarks/fit_speed.py`."""

import numpy as np


def zipf_ids(rng, vocab, shape, exponent=1.0):
    """int32 ids in `[0, vocab)`, id `i` drawn with probability proportional
    to `1 / (i + 1) ** exponent` (id 0 the most frequent).

    Example:

    >>> ids = zipf_ids(np.random.default_rng(0), 1000, 10_000)
    >>> bool((ids == 0).sum() > (ids == 9).sum() > (ids == 99).sum())
    True
    """
    weights = 1.0 / np.arange(1, vocab + 1) ** exponent
    return rng.choice(vocab, shape, p=weights / weights.sum()).astype("int32")
