"""Hard sibling negatives for training (`--sibling-negatives`): drawn from the training closure only."""

import numpy as np
import pytest

from keras_gauss.hierarchy import hierarchy_from_parents, split_edges
from keras_gauss.hierarchy.closure import EdgeIndex, closure_index, transitive_reduction
from keras_gauss.hierarchy.dataset import make_dataset
from keras_gauss.hierarchy.negatives import sibling_negatives


@pytest.fixture(scope="module")
def reduction(mammal):
    return split_edges(mammal, method="reduction", seed=0)


def test_transitive_reduction_of_a_closure(mammal, reduction):
    assert np.array_equal(transitive_reduction(mammal.index), mammal.basic_edges)
    direct = transitive_reduction(reduction.train_index)
    # the direct links of the training closure generate it, and hold no held-out edge
    assert np.array_equal(closure_index(direct, mammal.num_nodes).keys, reduction.train_index.keys)
    held_out = np.concatenate([reduction.val, reduction.test])
    assert not EdgeIndex(direct, mammal.num_nodes).contains(held_out[:, 0], held_out[:, 1]).any()


def test_sibling_negatives_are_siblings_in_the_training_closure(mammal, reduction):
    known = reduction.train_index
    edges = reduction.train
    s, g, found = sibling_negatives(edges, known, 4, rng=0)
    assert s.shape == g.shape == found.shape == (len(edges), 4)
    assert (s == edges[:, :1]).all()  # only the general side is replaced
    assert found.mean() > 0.5
    assert (g[~found] == np.repeat(edges[:, 1:], 4, axis=1)[~found]).all()
    # each new general node is another child of a direct parent of the old one,
    # both read from the training closure's direct links, and unrelated to the specific node
    direct = {tuple(e) for e in transitive_reduction(known).tolist()}
    parents, children = {}, {}
    for c, p in direct:
        parents.setdefault(c, set()).add(p)
        children.setdefault(p, set()).add(c)
    rows, cols = np.nonzero(found)
    for (c, p), q in zip(edges[rows].tolist(), g[rows, cols].tolist()):
        assert q != p and any(q in children[r] for r in parents[p]), (c, p, q)
    assert not known.related(s[found], g[found]).any()
    # the same draws come from the training edges alone: the sampler cannot know the held-out ones
    alone = closure_index(reduction.train, mammal.num_nodes)
    assert all(np.array_equal(a, b) for a, b in zip(sibling_negatives(edges, alone, 4, rng=0),
                                                   (s, g, found)))


def test_a_held_out_edge_is_drawn_only_where_training_makes_it_a_sibling_pair():
    # In a tree, (c, q) held out with q's own parent edge (q, p) held out too
    # leaves c below p and q beside p in training: (c, q) is then a fair sibling
    # negative (the sampler cannot know better). Any other held-out edge would
    # show that the sampler saw the full hierarchy, which never draws one.
    rng = np.random.default_rng(0)
    parents = {f"n{i}": [f"n{rng.integers(max(0, i - 30), i)}"] for i in range(1, 400)}
    tree = hierarchy_from_parents(parents)
    split = split_edges(tree, method="reduction", val_size=30, test_size=30, seed=0)
    s, g, found = sibling_negatives(split.train, split.train_index, 8, rng=1)
    assert found.mean() > 0.5
    held_out = {tuple(e) for e in np.concatenate([split.val, split.test]).tolist()}
    parent_of = {c: p for c, p in tree.basic_edges.tolist()}
    drawn = set(zip(s[found].tolist(), g[found].tolist()))
    assert all((q, parent_of[q]) in held_out for c, q in drawn & held_out)
    # the full hierarchy's direct links give other siblings, and no held-out edge
    s_full, g_full, found_full = sibling_negatives(split.train, tree.index, 8, rng=1)
    assert not np.array_equal(g_full, g)
    assert not set(zip(s_full[found_full].tolist(), g_full[found_full].tolist())) & held_out


def test_dataset_mixes_sibling_negatives(mammal, reduction):
    def negatives(fraction):
        ds = make_dataset(reduction.train, known=reduction.train_index, batch_size=len(reduction.train),
                          negatives=4, sibling_negatives=fraction, seed=3)
        x, _ = next(iter(ds))
        return x["general"].numpy(), x["neg_specific"].numpy(), x["neg_general"].numpy()

    base = make_dataset(reduction.train, known=reduction.train_index, batch_size=len(reduction.train),
                        negatives=4, seed=3)
    x0, _ = next(iter(base))
    gen, s0, g0 = negatives(0.0)  # 0 draws exactly as before
    assert np.array_equal(g0, x0["neg_general"].numpy()) and np.array_equal(s0, x0["neg_specific"].numpy())
    direct = EdgeIndex(transitive_reduction(reduction.train_index), mammal.num_nodes)

    def sibling_share(g):
        old = np.repeat(gen, 4)
        shared = np.array([a != b and np.intersect1d(direct.ancestors(a), direct.ancestors(b)).size > 0
                           for a, b in zip(old, g.ravel())])
        return shared.mean()

    _, _, g_all = negatives(1.0)
    _, _, g_half = negatives(0.5)
    share = sibling_share(g_all)  # every edge whose general node has a sibling
    assert sibling_share(g0) < 0.1 and share > 0.5
    assert 0.4 * share < sibling_share(g_half) < 0.6 * share
    with pytest.raises(ValueError, match="sibling_negatives"):
        make_dataset(reduction.train, known=reduction.train_index, sibling_negatives=1.5)


def test_config_rejects_a_bad_fraction():
    from keras_gauss.hierarchy.train import WordNetConfig

    with pytest.raises(ValueError, match="--sibling-negatives"):
        WordNetConfig(sibling_negatives=-0.1).validate()
