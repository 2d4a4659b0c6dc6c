import numpy as np
import pytest

from keras_gauss.hierarchy import hierarchy_from_parents, sample_negatives
from keras_gauss.hierarchy.dataset import make_dataset


def replaced(edges, neg_s, neg_g):
    """(new node, kept node, specific side replaced?) for each negative."""
    spec = np.repeat(edges[:, :1], neg_s.shape[1], axis=1)
    gen = np.repeat(edges[:, 1:], neg_s.shape[1], axis=1)
    keep_specific = neg_s == spec
    assert (keep_specific ^ (neg_g == gen)).all()  # exactly one side changed
    return np.where(keep_specific, neg_g, neg_s), np.where(keep_specific, spec, gen), ~keep_specific


def test_negatives_are_unrelated(full):
    neg_s, neg_g = sample_negatives(full.edges, full, 2, rng=0)
    assert neg_s.shape == neg_g.shape == (len(full.edges), 2) and neg_s.dtype == np.int32
    new, kept, spec_side = replaced(full.edges, neg_s, neg_g)
    assert not full.index.related(new, kept).any()
    assert not full.index.contains(neg_s, neg_g).any()
    assert 0.4 < spec_side.mean() < 0.7
    # edges into the root can only have their specific side kept
    root = full.node_ids["entity.n.01"]
    assert not spec_side[full.edges[:, 1] == root].any()


def test_negatives_edge_rule_and_sides(mammal):
    s, g = sample_negatives(mammal.edges, mammal, 3, exclude="edges", corrupt="general", rng=1)
    assert (s == mammal.edges[:, :1]).all()
    assert not mammal.index.contains(s, g).any() and not (s == g).any()
    s2, g2 = sample_negatives(mammal.edges, mammal, 3, exclude="edges", corrupt="general", rng=1)
    assert np.array_equal(g, g2)


def test_negatives_exact_fallback():
    # a chain with one unrelated node: "a" and "b" leave only "z" as a valid partner
    h = hierarchy_from_parents({"b": ["a"], "c": ["b"], "z": []})
    edges = np.array([[h.node_ids["c"], h.node_ids["b"]]] * 50)
    s, g = sample_negatives(edges, h, 4, rng=0)
    new, kept, _ = replaced(edges, s, g)
    assert (new == h.node_ids["z"]).all()


def test_negatives_impossible():
    h = hierarchy_from_parents({"b": ["a"]})
    with pytest.raises(ValueError, match="no valid negative"):
        sample_negatives(h.edges, h, 1, rng=0)
    with pytest.raises(ValueError, match="corrupt"):
        sample_negatives(h.edges, h, corrupt="both")


def test_dataset_elements(mammal):
    ds = make_dataset(mammal, batch_size=100, negatives=3, reversed_negatives=True, seed=0)
    assert ds.cardinality().numpy() == 66
    assert ds.options().autotune.enabled is False  # keras_gauss.tf_data
    x, y = next(iter(ds))
    assert set(x) == {"specific", "general", "neg_specific", "neg_general"}
    assert x["specific"].shape == x["general"].shape == (100,)
    assert x["neg_specific"].shape == x["neg_general"].shape == (100, 4)
    assert all(v.dtype.name == "int32" for v in x.values())
    assert y.dtype.name == "float32" and y.shape == (100, 5)
    assert np.array_equal(y.numpy(), np.tile([1, 0, 0, 0, 0], (100, 1)))
    # the reversed pair is the last negative
    assert np.array_equal(x["neg_specific"].numpy()[:, -1], x["general"].numpy())
    assert np.array_equal(x["neg_general"].numpy()[:, -1], x["specific"].numpy())


def epoch(ds):
    batches = list(ds.as_numpy_iterator())
    return {k: np.concatenate([b[0][k] for b in batches]) for k in batches[0][0]}


def test_dataset_epoch_covers_edges_once_with_valid_negatives(full):
    from keras_gauss.hierarchy import split_edges

    train = split_edges(full, seed=0).train
    ds = make_dataset(train, known=full, batch_size=4096, negatives=2, seed=0)
    x = epoch(ds)
    pos = np.stack([x["specific"], x["general"]], axis=1)
    assert not np.array_equal(pos, train)  # shuffled
    assert np.array_equal(pos[np.lexsort(pos.T[::-1])], train)  # every edge exactly once
    new, kept, _ = replaced(pos, x["neg_specific"], x["neg_general"])
    assert not full.index.related(new, kept).any()


def test_dataset_seeded(mammal):
    a = make_dataset(mammal, batch_size=512, seed=7)
    b = make_dataset(mammal, batch_size=512, seed=7)
    first, again, second = epoch(a), epoch(b), epoch(a)
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert not np.array_equal(first["specific"], second["specific"])  # a new epoch reshuffles


def test_dataset_drop_remainder_and_bad_input(mammal):
    ds = make_dataset(mammal, batch_size=1000, drop_remainder=True, shuffle=False)
    sizes = [len(x["specific"]) for x, _ in ds.as_numpy_iterator()]
    assert sizes == [1000] * 6 and ds.cardinality().numpy() == 6
    with pytest.raises(ValueError):
        make_dataset(np.zeros((0, 2), np.int32))


def _batches(batches):
    """`[(x, y)]` of NumPy arrays, from `tf.data` or an `EdgeBatches`."""
    if hasattr(batches, "as_numpy_iterator"):
        return list(batches.as_numpy_iterator())
    return [batches[i] for i in range(len(batches))]


def _assert_same(a, b):
    assert len(a) == len(b) > 0
    for (xa, ya), (xb, yb) in zip(a, b):
        assert xa.keys() == xb.keys()
        for key in xa:
            assert xa[key].dtype == xb[key].dtype and np.array_equal(xa[key], xb[key]), key
        assert ya.dtype == yb.dtype and np.array_equal(ya, yb)


@pytest.mark.parametrize("options", [
    {"negatives": 3, "reversed_negatives": True},
    {"negatives": 2, "sibling_negatives": 0.5, "drop_remainder": True},
    {"corrupt": "general", "shuffle": False}])
def test_edge_batches_are_the_tf_data_batches_of_the_epoch(mammal, options):
    """`EdgeBatches` (no TensorFlow: JAX, torch) serves pass `epoch` of
    `make_dataset` (`tf.data`), batch for batch; `skip` as `tf.data`'s."""
    from keras_gauss.hierarchy.dataset import EdgeBatches
    from keras_gauss.hierarchy.dataset import epoch_batches

    split = mammal.edges[::3]
    common = dict(known=mammal, batch_size=700, seed=5, **options)
    on_tf = make_dataset(split, first_pass=3, **common)
    third, fourth = _batches(on_tf), _batches(on_tf)  # passes 3 and 4
    neutral = EdgeBatches(split, epoch=3, **common)
    _assert_same(_batches(neutral), third)
    _assert_same(_batches(neutral), third)  # read again: the same
    _assert_same(_batches(EdgeBatches(split, epoch=4, **common)), fourth)
    _assert_same(_batches(neutral.skip(2)), _batches(make_dataset(split, first_pass=3,
                                                                   **common).skip(2)))
    assert type(epoch_batches(split, 3, **common)) is type(on_tf)  # on TensorFlow: tf.data
    assert isinstance(epoch_batches(split, 3, tf_data=False, **common), EdgeBatches)
    # the passes drawn ahead in threads (EpochDraws) are the same batches
    from keras_gauss.hierarchy.dataset import EpochDraws

    drawing = {k: v for k, v in common.items() if k not in ("batch_size", "drop_remainder")}
    draws = EpochDraws(split, ahead=2, passes=5, **drawing)
    batching = {k: common[k] for k in ("batch_size", "drop_remainder") if k in common}
    _assert_same(_batches(epoch_batches(split, 3, tf_data=False, draws=draws, **common)), third)
    assert sorted(draws._futures) == [4]  # drawn ahead, never past the run's last pass
    _assert_same(_batches(EdgeBatches(split, epoch=4, draws=draws, **batching)), fourth)
    assert not draws._futures
    draws.close()
