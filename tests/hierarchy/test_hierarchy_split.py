import numpy as np
import pytest

from keras_gauss.hierarchy import hierarchy_from_parents, split_edges
from keras_gauss.hierarchy.closure import transitive_closure


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
        split_edges(mammal, val_size=4000, test_size=4000)  # 8000 > 5360 candidate edges
    default = split_edges(mammal)  # the smaller of 4,000 and 10% of the 5,360 candidates
    assert len(default.val) == len(default.test) == 536 and default.eligible == 5360
    s = split_edges(mammal, val_size=0.1, test_size=0.1, seed=3)
    candidates = len(mammal.edges) - len(mammal.basic_edges)
    assert len(s.val) == len(s.test) == round(0.1 * candidates)
    assert not mammal.index.contains(s.test_neg[:, 0], s.test_neg[:, 1]).any()
    with pytest.raises(ValueError, match="val_size"):
        split_edges(mammal, val_size=-1)


@pytest.fixture(scope="module")
def reduction(mammal):
    return split_edges(mammal, method="reduction", seed=0)


def test_reduction_split_holds_out_what_training_cannot_imply(mammal, reduction):
    s = reduction
    held_out = np.concatenate([s.val, s.test])
    assert len(s.val) == len(s.test) == round(0.1 * s.eligible) == 118
    # Held-out edges are edges of the transitive reduction, and none is a training edge.
    assert np.isin(keys(mammal, held_out), keys(mammal, mammal.basic_edges)).all()
    assert not np.isin(keys(mammal, held_out), keys(mammal, s.train)).any()
    # The closure of the training edges does not contain them (a lookup cannot pass) ...
    closure = transitive_closure(s.train, mammal.num_nodes)
    assert not np.isin(keys(mammal, held_out), keys(mammal, closure)).any()
    assert not s.train_index.contains(held_out[:, 0], held_out[:, 1]).any()
    # ... and the training edges are already closed.
    assert np.array_equal(closure, s.train)
    # Every node is still in a training edge.
    assert np.union1d(s.train[:, 0], s.train[:, 1]).size == mammal.num_nodes


def test_every_node_keeps_an_edge_in_a_tiny_reduction_split():
    # A star: holding out every leaf's only edge would isolate it; only deeper edges are eligible.
    h = hierarchy_from_parents({"b": ["a"], "c": ["a"], "d": ["b"], "e": ["b"], "f": ["c"], "g": ["c"]})
    s = split_edges(h, method="reduction", val_size=2, test_size=2, seed=0)
    assert np.union1d(s.train[:, 0], s.train[:, 1]).size == h.num_nodes
    with pytest.raises(ValueError, match="without isolating a node"):
        split_edges(h, method="reduction", val_size=4, test_size=4)


def test_extra_negatives_share_the_positives(full, mammal, reduction):
    for split, h in ((reduction, mammal), (split_edges(mammal, seed=1), mammal)):
        parts = split.parts()
        for name in ("val", "test"):
            pos = getattr(split, name)
            assert np.array_equal(parts[f"{name}_reversed"][1], pos[:, ::-1])
            sib_pos, sib_neg = parts[f"{name}_sibling"]
            assert len(sib_pos) > 0.6 * len(pos)  # the root has no sibling
            assert np.isin(keys(h, sib_pos), keys(h, pos)).all()
            assert (sib_neg[:, 0] == sib_pos[:, 0]).all()
            # the new general node shares a direct parent with the old one, and is unrelated
            basic = {tuple(e) for e in h.basic_edges.tolist()}
            for (c, p), (_, q) in zip(sib_pos.tolist(), sib_neg.tolist()):
                assert q != p and any((q, r) in basic for r in h.index.ancestors(p) if (p, r) in basic)
            assert not h.index.related(sib_neg[:, 0], sib_neg[:, 1]).any()


def test_bad_method(mammal):
    with pytest.raises(ValueError, match="--split"):
        split_edges(mammal, method="random")


def test_a_tiny_taxonomy_chooses_on_its_training_edges_even_with_repeated_negatives():
    # 4 training edges, too few pairs that are not edges for 4 distinct negatives: the
    # training edges' negatives may repeat (before: "could not draw distinct negatives")
    from keras_gauss.hierarchy.split import with_training_pairs

    h = hierarchy_from_parents({"n1": ["n0"], "n2": ["n1"], "n3": ["n0"], "n4": ["n2"]})
    split = split_edges(h, seed=0)
    chosen_on, warning = with_training_pairs(split, h, 0)
    assert len(chosen_on.val) == len(chosen_on.val_neg) == len(split.val) + len(split.train)
    assert not h.index.contains(chosen_on.val_neg[:, 0], chosen_on.val_neg[:, 1]).any()
    assert warning.startswith("warning: only")
    # held-out edges still get distinct negatives, or one line naming the sizes
    chain = hierarchy_from_parents({"n1": ["n0"], "n2": ["n1"], "n3": ["n2"], "n4": ["n3"],
                                    "n5": ["n4"], "n6": ["n2"]})
    with pytest.raises(ValueError, match=r"could not draw 12 distinct negatives for the 12 "
                                         r"held-out edges: .*hold out fewer \(--val-size, "
                                         r"--test-size\)"):
        split_edges(chain, val_size=0.5, test_size=0.5, seed=0)


@pytest.mark.parametrize("method", ["closure", "reduction"])
def test_with_word_nodes_the_held_out_edges_are_the_synset_runs(method):
    from keras_gauss.hierarchy.closure import build_hierarchy

    words, synsets = build_hierarchy("mammal.n.01", include_lemmas=True), build_hierarchy("mammal.n.01")
    with_words = split_edges(words, seed=3, method=method)
    alone = split_edges(synsets, seed=3, method=method)
    for part in ("val", "test", "val_neg", "test_neg", "val_sibling", "test_sibling"):
        assert np.array_equal(getattr(with_words, part), getattr(alone, part)), part
    # every other edge trains: the synsets' training edges and every word edge
    held_out = keys(words, np.concatenate([alone.val, alone.test]))
    assert np.array_equal(keys(words, with_words.train),
                          np.setdiff1d(keys(words, words.edges), held_out))
    assert with_words.num_nodes == words.num_nodes and with_words.eligible == alone.eligible


@pytest.mark.parametrize("words", [False, True])
def test_the_closure_splits_training_closure_is_the_whole_closure(words):
    from keras_gauss.hierarchy.closure import build_hierarchy
    from keras_gauss.hierarchy.closure import closure_index

    h = build_hierarchy("mammal.n.01", include_lemmas=words)
    split = split_edges(h, seed=1)
    computed = closure_index(split.train, h.num_nodes)  # what train_index computed before
    assert split.train_index.num_nodes == computed.num_nodes == h.num_nodes
    assert np.array_equal(split.train_index.keys, computed.keys)
    reduction = split_edges(h, seed=1, method="reduction")  # there it is computed
    assert len(reduction.train_index.keys) < len(h.edges)



@pytest.mark.parametrize("method", ["closure", "reduction"])
def test_holding_out_nothing_trains_every_edge(method):
    # --val-size 0 --test-size 0, or a taxonomy too small for 10% to be an edge
    h = hierarchy_from_parents({"b": ["a"], "c": ["a"], "d": ["b"], "e": ["b"], "f": ["c"]})
    for size in (0, 0.1):
        split = split_edges(h, val_size=size, test_size=size, seed=0, method=method)
        assert len(split.train) == len(h.edges) and len(split.val) == len(split.test) == 0
