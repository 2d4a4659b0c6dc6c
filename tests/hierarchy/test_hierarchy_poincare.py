"""The gensim Poincaré peer: its distance against gensim's own, and its scores."""

import numpy as np
import pytest

from keras_gauss.hierarchy.poincare import poincare_distance, train_poincare


def test_distance_matches_gensim_and_the_closed_form():
    poincare = pytest.importorskip("gensim.models.poincare")
    rng = np.random.default_rng(0)
    u = rng.uniform(-0.4, 0.4, (20, 5))  # inside the unit ball
    v = rng.uniform(-0.4, 0.4, (20, 5))  # inside the unit ball
    ours = poincare_distance(u, v)
    theirs = [poincare.PoincareKeyedVectors.vector_distance(a, b) for a, b in zip(u, v)]
    assert np.allclose(ours, theirs)
    # from the origin, the distance is 2 artanh(|v|)
    assert np.allclose(poincare_distance(np.zeros(5), v), 2 * np.arctanh(np.linalg.norm(v, axis=1)))


def test_scores_are_negative_distances_and_symmetric():
    pytest.importorskip("gensim")
    nodes = ["root", "a", "b", "a1", "a2", "b1"]
    edges = np.array([[1, 0], [2, 0], [3, 1], [4, 1], [5, 2], [3, 0], [4, 0], [5, 0]])
    score, info = train_poincare(edges, nodes, dim=5, seconds=0, max_epochs=3, negative=2)
    assert info["epochs"] == 1  # the budget is spent after one epoch
    s = score(edges)
    assert s.shape == (len(edges),) and (s <= 0).all()
    assert np.allclose(s, score(edges[:, ::-1]))
    with pytest.raises(ValueError, match="no training edge"):
        train_poincare(edges[:2], nodes, dim=5, seconds=0, negative=1)[0](np.array([[5, 0]]))
