"""Walker's alias tables (`keras_gauss.fused.sampling`)."""

import numpy as np
import pytest

from keras_gauss.fused import alias_table


def test_alias_table_reproduces_the_distribution():
    weights = np.array([5.0, 0.0, 1.0, 2.5, 0.25])
    probs, alias = alias_table(weights)
    n = len(weights)
    exact = np.zeros(n)
    for i in range(n):
        exact[i] += probs[i] / n
        exact[alias[i]] += (1 - probs[i]) / n
    np.testing.assert_allclose(exact, weights / weights.sum(), atol=1e-7)
    with pytest.raises(ValueError, match="non-negative"):
        alias_table([1.0, -1.0])
    with pytest.raises(ValueError, match="not all zero"):
        alias_table([0.0, 0.0])
