"""The gensim Poincaré peer of `benchmarks/wordnet.py`: its distance against
gensim's own, and its scores. Not part of the product's suite:
`python -m pytest benchmarks/test_poincare_peer.py`."""

import numpy as np
import pytest

from poincare_peer import poincare_distance, train_poincare  # benchmarks/ (pytest puts it on the path)


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


def test_the_peer_trains_on_a_runs_split_and_scores_its_parts(tmp_path):
    """`benchmarks/wordnet.py`'s peer: trained on RUN/split/train.tsv, scored on every part."""
    pytest.importorskip("gensim")
    from wordnet import poincare_evaluation

    from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet

    config = WordNetConfig(root="mammal.n.01", dim=4, epochs=1, batch_size=64,
                           split="reduction", val_size=0.2, test_size=0.2)
    train_wordnet(config, tmp_path / "run", verbose=0)
    poincare = poincare_evaluation(tmp_path / "run", seconds=0.1)
    assert poincare["training"]["epochs"] >= 1 and poincare["training"]["dim"] == 50
    assert set(poincare) == {"random", "reversed", "sibling", "training"}
    # A distance is symmetric: a reversed edge scores exactly as the edge.
    assert poincare["reversed"]["test_accuracy"] == 0.5
