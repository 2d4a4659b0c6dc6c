"""The native score blocks (`keras_gauss.fused.scores`) against a pair-at-a-time NumPy formula."""

import numpy as np
import pytest

from keras_gauss.fused import native_available
from keras_gauss.fused import scores

pytestmark = pytest.mark.skipif(not native_available(), reason="no C++ compiler")


def reference(mq, vq, mc, vc, energy):
    if energy == "containment":
        return -np.sum(np.maximum(0.0, np.abs(mc - mq) + np.sqrt(vq) - np.sqrt(vc)) ** 2)
    kl = 0.5 * (np.sum(vq / vc) + np.sum((mc - mq) ** 2 / vc) - len(mq)
                + np.sum(np.log(vc)) - np.sum(np.log(vq)))
    return -kl


@pytest.mark.parametrize("energy", ["containment", "kl"])
def test_energy_block_matches_a_pair_at_a_time_formula(energy):
    rng = np.random.default_rng(0)
    n, d = 300, 7  # more than one 256-candidate tile
    means, variances = rng.normal(size=(n, d)), np.exp(rng.normal(scale=0.5, size=(n, d)))
    q = rng.integers(0, n, size=40)
    got = scores.energy_block(means, variances, q, energy)
    want = [[reference(means[u], variances[u], means[v], variances[v], energy) for v in range(n)]
            for u in q]
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(got[np.arange(len(q)), q], 0.0, atol=1e-12)  # a node against itself


def test_bad_arguments_say_what_is_wrong():
    means, variances = np.zeros((3, 2)), np.ones((3, 2))
    with pytest.raises(ValueError, match="energy must be one of"):
        scores.energy_block(means, variances, [0], "el")
    with pytest.raises(ValueError, match=r"query ids must lie in \[0, 3\)"):
        scores.energy_block(means, variances, [3], "kl")
    with pytest.raises(ValueError, match="variances have shape"):
        scores.energy_block(means, np.ones((3, 1)), [0], "kl")
    with pytest.raises(ValueError, match="out of range"):
        scores.ancestor_counts(np.zeros((2, 3)), [2], [0])
