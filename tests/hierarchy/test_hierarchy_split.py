import numpy as np
import pytest

from keras_gauss.hierarchy import split_edges


def keys(h, edges):
    return edges[:, 0].astype(np.int64) * h.num_nodes + edges[:, 1]


@pytest.fixture(scope="module")
def split(full):
    return split_edges(full, seed=0)


def test_sizes_and_partition(full, split):
    assert len(split.val) == len(split.val_neg) == len(split.test) == len(split.test_neg) == 4000
    assert len(split.train) == len(full.edges) - 8000
    parts = [keys(full, a) for a in (split.train, split.val, split.test)]
    every = np.concatenate(parts)
    assert len(np.unique(every)) == len(every) == len(full.edges)  # disjoint, no duplicates
    assert np.array_equal(np.sort(every), keys(full, full.edges))


def test_basic_edges_stay_in_training(full, split):
    assert np.isin(keys(full, full.basic_edges), keys(full, split.train)).all()


def test_negatives(full, split):
    neg = np.concatenate([split.val_neg, split.test_neg])
    pos = np.concatenate([split.val, split.test])
    assert neg.dtype == np.int32
    assert not full.index.contains(neg[:, 0], neg[:, 1]).any()
    assert not (neg[:, 0] == neg[:, 1]).any()
    assert len(np.unique(keys(full, neg))) == len(neg)
    same_specific = neg[:, 0] == pos[:, 0]
    same_general = neg[:, 1] == pos[:, 1]
    assert (same_specific ^ same_general).all()  # exactly one side replaced
    assert 0.3 < same_specific.mean() < 0.7  # both sides get corrupted


def test_seeded(full, split):
    again = split_edges(full, seed=0)
    other = split_edges(full, seed=1)
    for name in ("train", "val", "val_neg", "test", "test_neg"):
        assert np.array_equal(getattr(split, name), getattr(again, name))
    assert not np.array_equal(split.val, other.val)


def test_small_subtree(mammal):
    with pytest.raises(ValueError, match="transitive reduction"):
        split_edges(mammal)  # 8000 > 5360 candidate edges
    s = split_edges(mammal, val_size=0.1, test_size=0.1, seed=3)
    candidates = len(mammal.edges) - len(mammal.basic_edges)
    assert len(s.val) == len(s.test) == round(0.1 * candidates)
    assert not mammal.index.contains(s.test_neg[:, 0], s.test_neg[:, 1]).any()
    with pytest.raises(ValueError, match="val_size"):
        split_edges(mammal, val_size=-1)
