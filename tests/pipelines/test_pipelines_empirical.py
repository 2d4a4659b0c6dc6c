"""Empirical covariances (the paper's Section 3) against a direct numpy computation."""

import numpy as np
import pytest

from keras_gauss.pipelines import Vocabulary
from keras_gauss.pipelines.empirical import context_moments
from keras_gauss.pipelines.empirical import empirical_gaussians
from keras_gauss.pipelines.empirical import empirical_variances


LINES = ["a b c d a", "b b c", "d a c b a e", "e"]


def _numpy_variances(vocab, W, C, window, ridge):
    index = {w: i for i, w in enumerate(vocab.words)}
    n, d = W.shape
    total = np.zeros((n, d))
    count = np.zeros(n)
    for line in LINES:
        ids = [index[t] for t in line.split()]
        for i, w in enumerate(ids):
            for j in range(max(0, i - window), min(len(ids), i + window + 1)):
                if j != i:
                    total[w] += (C[ids[j]] - W[w]) ** 2
                    count[w] += 1
    return total, count


@pytest.mark.parametrize("window", [1, 2])
def test_diagonal_matches_numpy(write_corpus, window):
    path = write_corpus(LINES)
    vocab = Vocabulary(["a", "b", "c", "d", "e"], [5, 5, 3, 2, 2])
    rng = np.random.default_rng(0)
    W, C = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    emb = empirical_gaussians(path, vocab, W, C, window=window, ridge=0.01)
    total, count = _numpy_variances(vocab, W, C, window, 0.01)
    seen = count > 0
    want = total[seen] / count[seen, None] + 0.01
    np.testing.assert_allclose(emb.variances[seen], want, rtol=1e-9)
    np.testing.assert_allclose(emb.means, W)
    # "e" has a context ("a" in line 3) at window >= 1; counts match exactly
    counts, _, _ = context_moments(path, vocab, C, window=window)
    np.testing.assert_array_equal(counts, count)


def test_spherical_is_mean_of_diagonal_and_unseen_words(write_corpus):
    path = write_corpus(["a b", "a b"])
    vocab = Vocabulary(["a", "b", "z"], [2, 2, 1])
    W = np.array([[0.0, 0.0], [1.0, 3.0], [5.0, 5.0]])
    diag = empirical_gaussians(path, vocab, W, window=1, ridge=0.5).variances
    # a's contexts: b twice -> (1, 9); b's: a twice -> (1, 9); z unseen -> average
    np.testing.assert_allclose(diag, [[1.5, 9.5], [1.5, 9.5], [1.5, 9.5]])
    sph = empirical_gaussians(path, vocab, W, window=1, ridge=0.5,
                              covariance="spherical").variances
    np.testing.assert_allclose(sph, [[5.5, 5.5]] * 3)


def test_bad_arguments():
    moments = (np.ones(2), np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="ridge"):
        empirical_variances(np.zeros((2, 2)), *moments, ridge=0)
    with pytest.raises(ValueError, match="covariance"):
        empirical_variances(np.zeros((2, 2)), *moments, covariance="full")
