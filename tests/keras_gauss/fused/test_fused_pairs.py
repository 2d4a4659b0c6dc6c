"""The native pair trainer (`keras_gauss.fused.pairs`): its step equals the
keras engine's compiled hierarchy model trained by `train_on_batch`, and its
negatives follow the rule of `keras_gauss.hierarchy.negatives.sample_negatives`."""

import itertools

import numpy as np
import pytest

from keras_gauss.fused.native import native_available
from keras_gauss.fused.pairs import NativePairTable
from keras_gauss.fused.pairs import RelatedNodes
from keras_gauss.fused.pairs import contains
from keras_gauss.fused.pairs import draw_negatives
from keras_gauss.fused.pairs import order

pytestmark = pytest.mark.skipif(not native_available(), reason="no C++ compiler")


def _keras_pair(config, rows, k, steps):
    from keras_gauss.hierarchy.engines import hierarchy_model

    model = hierarchy_model(config, rows, k, total_steps=steps)
    model.optimizer.build(model.trainable_variables)
    layer = model.get_layer("nodes")
    table = NativePairTable(rows, config.dim, spherical=config.covariance == "spherical",
                            energy=config.energy, loss=config.loss, margin=config.margin,
                            threshold=config.threshold, learning_rate=config.learning_rate,
                            schedule=config.learning_rate_schedule, total_steps=steps,
                            max_norm=config.max_norm, min_variance=config.min_variance,
                            max_variance=config.max_variance)
    accumulators = {v.path: v.numpy() for v in model.optimizer.variables
                    if "accumulator" in v.path}
    mean_acc = next(v for p, v in accumulators.items() if "mean" in p)
    var_acc = next(v for p, v in accumulators.items() if "variance" in p)
    table.set_arrays([layer.means.numpy(), layer.variances.numpy(), mean_acc, var_acc])
    return model, table


@pytest.mark.parametrize("energy, covariance, loss",
                         list(itertools.product(("kl", "containment"),
                                                ("diagonal", "spherical"),
                                                ("ranking", "threshold"))))
def test_steps_equal_the_keras_model_trained_by_train_on_batch(energy, covariance, loss):
    from keras_gauss.hierarchy.train import WordNetConfig

    rows, dim, k, n, steps = 12, 5, 3, 8, 4
    schedule = "linear" if loss == "ranking" else "cosine"
    # Bounds that bind: the means' norm and the variances reach them in a step.
    config = WordNetConfig(dim=dim, covariance=covariance, energy=energy, loss=loss,
                           margin=0.5, threshold=0.05, learning_rate=0.3, negatives=k,
                           max_norm=0.4, min_variance=0.9, max_variance=1.1, seed=3,
                           learning_rate_schedule=schedule).resolved()
    model, table = _keras_pair(config, rows, k, steps + 2)
    rng = np.random.default_rng(0)
    norm_bound = variance_bound = False
    for step in range(steps):  # ids repeat within a batch (12 rows, 32 pairs)
        x = {"specific": rng.integers(rows, size=n).astype(np.int32),
             "general": rng.integers(rows, size=n).astype(np.int32),
             "neg_specific": rng.integers(rows, size=(n, k)).astype(np.int32),
             "neg_general": rng.integers(rows, size=(n, k)).astype(np.int32)}
        y = np.zeros((n, 1 + k), np.float32)
        y[:, 0] = 1
        expected = float(model.train_on_batch(x, y))
        got = table.train_batch(x["specific"], x["general"], x["neg_specific"],
                                x["neg_general"], iteration=step)
        assert got == pytest.approx(expected, rel=1e-5, abs=1e-6)
        layer = model.get_layer("nodes")
        np.testing.assert_allclose(table.means, layer.means.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(table.variances, layer.variances.numpy(), rtol=1e-5,
                                   atol=1e-6)
        norms = np.linalg.norm(table.means, axis=1)
        norm_bound |= bool(np.isclose(norms, 0.4, rtol=1e-5).any())
        variance_bound |= bool(((table.variances == np.float32(0.9))
                                | (table.variances == np.float32(1.1))).any())
    assert norm_bound and variance_bound, "the constraints never bound"
    accumulators = [v.numpy() for v in model.optimizer.variables if "accumulator" in v.path]
    np.testing.assert_allclose(sorted(a.sum() for a in accumulators),
                               sorted([table.mean_accumulator.sum(),
                                       table.variance_accumulator.sum()]), rtol=1e-5)


def test_rows_without_a_gradient_are_left_as_they_are():
    # Row 3 only takes part in a negative far past its margin: no gradient,
    # so no update, not even its max-norm clip (its mean lies outside on
    # purpose: an update would clip it). Rows 0-2 (the positive and a close
    # negative) train.
    table = NativePairTable(4, 2, energy="kl", loss="ranking", margin=0.1,
                            learning_rate=0.5, max_norm=3.0, min_variance=0.1,
                            max_variance=10.0)
    means = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1], [2.5, 2.5]], np.float32)
    variances = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.1, 0.1]], np.float32)
    table.set_arrays([means, variances, np.full((4, 2), 0.1), np.full((4, 2), 0.1)])
    before = [a.copy() for a in table.arrays()]
    # The positive (0 is-a 1); negatives (2 is-a 0): close, (3 is-a 2): far.
    assert table.train_batch([0], [1], [[2, 3]], [[0, 2]]) > 0
    for array, old in zip(table.arrays(), before):
        np.testing.assert_array_equal(array[3], old[3])
    assert (table.means[:3] != before[0][:3]).any(axis=1).all()


def _tree(depth=3, branching=3):
    """A complete tree: node 0 the root, `ancestors` of every node."""
    ancestors, parents = [[]], {0: None}
    frontier = [0]
    for _ in range(depth):
        new = []
        for node in frontier:
            for _ in range(branching):
                child = len(ancestors)
                ancestors.append(ancestors[node] + [node])
                parents[child] = node
                new.append(child)
        frontier = new
    return [sorted(a) for a in ancestors]


def _related(ancestors):
    return lambda a, b: a == b or a in ancestors[b] or b in ancestors[a]


def test_negatives_never_related_and_uniform_over_the_allowed_nodes():
    from scipy import stats

    ancestors = _tree()  # 40 nodes
    related = RelatedNodes.from_lists(ancestors)
    check = _related(ancestors)
    specific, general = np.array([5], np.int32), np.array([1], np.int32)  # 5 is-a 1
    neg_s, neg_g = draw_negatives(related, np.repeat(specific, 1), general, 20000, seed=1,
                                  epoch=0, step=0)
    kept_s = neg_s == 5  # the general side replaced (either side, a fair coin)
    assert 0.48 < kept_s.mean() < 0.52
    for kept, new in ((5, neg_g[kept_s]), (1, neg_s[~kept_s])):
        assert not any(check(int(v), kept) for v in np.unique(new))
        allowed = [v for v in range(len(ancestors)) if not check(v, kept)]
        assert set(np.unique(new).tolist()) == set(allowed)
        counts = np.bincount(new, minlength=len(ancestors))[allowed]
        assert stats.chisquare(counts).pvalue > 1e-3


def test_the_other_side_when_one_cannot_be_replaced_and_the_reversed_negative_last():
    ancestors = _tree(2, 2)  # 0 -> 1, 2; 1 -> 3, 4; 2 -> 5, 6
    related = RelatedNodes.from_lists(ancestors)
    # 0 is related to every node: keeping it, nothing can replace 3; so the
    # general side (0) is replaced, by a node unrelated to 3.
    neg_s, neg_g = draw_negatives(related, [3], [0], 200, seed=0, epoch=2, step=5,
                                  reversed_negatives=True)
    assert neg_s.shape == (1, 201)
    assert (neg_s[0, :-1] == 3).all() and set(neg_g[0, :-1].tolist()) == {2, 4, 5, 6}
    assert (neg_s[0, -1], neg_g[0, -1]) == (0, 3)  # the reversed edge, last
    # An edge with no valid negative on either side: one line.
    with pytest.raises(ValueError, match=r"edge \[1, 0\] has no valid negative"):
        draw_negatives(RelatedNodes.from_lists([[], [0]]), [1], [0], 1, seed=0, epoch=0,
                       step=0)


def test_draws_are_a_function_of_seed_epoch_and_step():
    related = RelatedNodes.from_lists(_tree())
    specific, general = np.arange(4, 14, dtype=np.int32), np.ones(10, np.int32)
    same = [draw_negatives(related, specific, general, 5, seed=7, epoch=1, step=2)
            for _ in range(2)]
    np.testing.assert_array_equal(same[0][0], same[1][0])
    np.testing.assert_array_equal(same[0][1], same[1][1])
    for other in ({"seed": 8, "epoch": 1, "step": 2}, {"seed": 7, "epoch": 2, "step": 2},
                  {"seed": 7, "epoch": 1, "step": 3}):
        draws = draw_negatives(related, specific, general, 5, **other)
        assert not np.array_equal(draws[0], same[0][0]) or \
            not np.array_equal(draws[1], same[0][1])
    np.testing.assert_array_equal(order(100, 3, 4), order(100, 3, 4))
    assert sorted(order(100, 3, 4).tolist()) == list(range(100))
    assert not np.array_equal(order(100, 3, 4), order(100, 3, 5))


def test_train_steps_trains_on_the_drawn_batches():
    # train_steps = the epoch's order, draw_negatives per step and train_batch.
    ancestors = _tree()
    related = RelatedNodes.from_lists(ancestors)
    edges = np.array([(c, a) for c, anc in enumerate(ancestors) for a in anc], np.int32)
    settings = dict(energy="containment", loss="threshold", margin=0.25, learning_rate=0.2,
                    max_norm=1.0, min_variance=0.05, max_variance=5.0)
    a = NativePairTable.initial(len(ancestors), 4, seed=0, **settings)
    b = NativePairTable.initial(len(ancestors), 4, seed=0, **settings)
    total = a.train_steps(related, edges, seed=5, epoch=1, batch_size=16, negatives=3,
                          reversed_negatives=True, first=1, last=4, iteration=10)
    edge_order = order(len(edges), 5, 1)
    expected = 0.0
    for step in range(1, 4):
        batch = edges[edge_order[step * 16:(step + 1) * 16]]
        neg_s, neg_g = draw_negatives(related, batch[:, 0], batch[:, 1], 3, seed=5, epoch=1,
                                      step=step, reversed_negatives=True)
        expected += b.train_batch(batch[:, 0], batch[:, 1], neg_s, neg_g,
                                  iteration=9 + step) * len(batch)
    for x, y in zip(a.arrays(), b.arrays()):
        np.testing.assert_array_equal(x, y)
    assert total == pytest.approx(expected, rel=1e-6)


def test_bad_ids_are_one_line():
    table = NativePairTable(3, 2)
    with pytest.raises(ValueError, match=r"`neg_general` holds id 3 .*outside \[0, 3\)"):
        table.train_batch([0], [1], [[2]], [[3]])


def test_exact_draw_when_the_kept_node_is_related_to_all_but_a_few():
    # The root (0) is related to every node but 1 and 2, whose edges to it
    # are held out (as a reduction split holds out a root edge): rejection
    # almost always fails, so the exact draw picks, uniformly over {1, 2}.
    ancestors = _tree(4, 3)  # 121 nodes
    ancestors[1] = ancestors[2] = []
    related = RelatedNodes.from_lists(ancestors)
    assert related.free[0] == 2
    leaf = len(ancestors) - 1  # below 3
    neg_s, neg_g = draw_negatives(related, [leaf] * 4000, [0] * 4000, 1, seed=3, epoch=0,
                                  step=0)
    kept_root = neg_g[:, 0] == 0
    assert kept_root.sum() > 1000
    assert set(neg_s[kept_root, 0].tolist()) == {1, 2}
    assert 0.45 < (neg_s[kept_root, 0] == 1).mean() < 0.55
    # Every node unrelated to the kept one, wherever it lies in the order.
    for kept in range(len(ancestors)):
        allowed = {v for v in range(len(ancestors)) if not _related(ancestors)(v, kept)}
        if not allowed:
            continue
        ids = np.full(600, kept, np.int32)
        s, g = draw_negatives(related, ids, ids, 1, seed=kept, epoch=0, step=0)
        new = np.where(s == kept, g, s)
        assert set(new.ravel().tolist()) <= allowed


def _reduction_split_with_a_root_edge_held_out():
    """A reduction split of 9,845 nodes (r -> a -> a ternary tree of depth 8,
    r -> b -> b0, b1) whose held-out edges hold (a, r): the root is then
    related to all nodes but one in the training closure."""
    from keras_gauss.hierarchy.closure import hierarchy_from_parents
    from keras_gauss.hierarchy.split import split_edges

    parents, frontier = {"a": ["r"], "b": ["r"], "b0": ["b"], "b1": ["b"]}, ["a"]
    for _ in range(8):
        frontier = [f"{p}.{i}" for p in frontier for i in range(3)]
        parents.update({c: [c.rsplit(".", 1)[0]] for c in frontier})
    hierarchy = hierarchy_from_parents(parents)
    split = split_edges(hierarchy, method="reduction", seed=2)
    held = np.concatenate([split.val, split.test])
    a, r = hierarchy.node_ids["a"], hierarchy.node_ids["r"]
    assert ((held[:, 0] == a) & (held[:, 1] == r)).any()
    return split


def test_a_reduction_split_trains_an_epoch_in_bounded_time():
    # The root keeps ~9,800 training edges whose negatives replace the
    # specific side by the one node unrelated to it: the exact draw once
    # sorted every related node per draw (here minutes an epoch, WordNet's
    # reduction split hours); it is O(log^2 nodes) now. The guard is
    # generous (the epoch takes about a second); it turns a hang into a failure.
    import threading

    from keras_gauss.hierarchy.native_training import related_nodes

    split = _reduction_split_with_a_root_edge_held_out()
    related = related_nodes(split.train_index)
    assert related.free.min() == 1  # the root: all but a are related to it
    table = NativePairTable.initial(split.num_nodes, 2, seed=0)
    result = {}

    def epoch():
        result["loss"] = table.train_steps(related, split.train, seed=0, epoch=0,
                                           batch_size=512, negatives=30)

    worker = threading.Thread(target=epoch, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "an epoch of a 9,845-node reduction split took over a minute"
    assert np.isfinite(result["loss"]) and result["loss"] > 0


def test_contains_looks_up_sorted_lists_and_refuses_ids_outside():
    lists = [[], [0], [0, 1], [5]]  # node 3 lists a node outside the four
    ptr = np.cumsum([0] + [len(x) for x in lists])
    flat = np.array([x for row in lists for x in row], np.int32)
    a = np.array([1, 2, 2, 0, 3, -1, 4, 2, 0])
    b = np.array([0, 1, 3, 2, 5, 0, 0, 2, 0])
    assert contains(ptr, flat, a, b).tolist() == [True, True, False, False, False, False,
                                                  False, False, False]
    assert contains(ptr, flat, a, b, either=True).tolist() == [True, True, False, True, False,
                                                               False, False, True, True]
    assert contains(ptr, flat, [[2], [1]], [0, 1]).tolist() == [[True, True], [True, False]]


def _with_siblings(ancestors, siblings):
    direct = RelatedNodes.from_lists([a[-1:] for a in ancestors])  # a tree's parent links
    related = RelatedNodes.from_lists(ancestors)
    return RelatedNodes(related.ancestor_ptr, related.ancestors, related.descendant_ptr,
                        related.descendants, siblings=siblings,
                        direct=(direct.ancestor_ptr, direct.ancestors, direct.descendant_ptr,
                                direct.descendants))


def test_sibling_negatives_replace_the_general_node_by_an_unrelated_sibling():
    ancestors = _tree()  # 1's children are 4, 5, 6; 4's are 13, 14, 15
    neg_s, neg_g = draw_negatives(_with_siblings(ancestors, 1.0), [13], [4], 2000, seed=0,
                                  epoch=0, step=0)
    assert (neg_s == 13).all() and set(np.unique(neg_g).tolist()) == {5, 6}
    assert 0.45 < (neg_g == 5).mean() < 0.55
    # about half hard with 0.5, the rest the random rule's
    neg_s, neg_g = draw_negatives(_with_siblings(ancestors, 0.5), [13], [4], 4000, seed=0,
                                  epoch=0, step=0)
    hard = (neg_s == 13) & np.isin(neg_g, [5, 6])
    assert 0.47 < hard.mean() < 0.55
    check = _related(ancestors)
    assert not any(check(int(s), int(g)) for s, g in zip(neg_s.ravel(), neg_g.ravel()))
    # the root has no siblings: random negatives only (the root kept as general
    # has no unrelated node, so 1's general side is replaced); 0 draws as before
    neg_s, neg_g = draw_negatives(_with_siblings(ancestors, 1.0), [1], [0], 200, seed=0,
                                  epoch=0, step=0)
    assert (neg_s == 1).all() and not any(check(int(g), 1) for g in neg_g.ravel())
    assert len(np.unique(neg_g)) > 10
    plain = draw_negatives(RelatedNodes.from_lists(ancestors), [13], [4], 50, seed=3, epoch=1,
                           step=2)
    same = draw_negatives(_with_siblings(ancestors, 0.0), [13], [4], 50, seed=3, epoch=1, step=2)
    assert all((a == b).all() for a, b in zip(plain, same))
    # a sibling related to the specific node is never drawn: 3 is-a 1 and 2
    # (two parents), so 1's sibling 2 is 3's ancestor
    dag = [[], [0], [0], [0, 1, 2], [0, 2], []]
    direct = RelatedNodes.from_lists([[], [0], [0], [1, 2], [2], []])
    related = RelatedNodes.from_lists(dag)
    related = RelatedNodes(related.ancestor_ptr, related.ancestors, related.descendant_ptr,
                           related.descendants, siblings=1.0,
                           direct=(direct.ancestor_ptr, direct.ancestors,
                                   direct.descendant_ptr, direct.descendants))
    neg_s, neg_g = draw_negatives(related, [3], [1], 200, seed=0, epoch=0, step=0)
    dag_check = _related(dag)
    assert not any(dag_check(int(a), int(b)) for a, b in zip(neg_s.ravel(), neg_g.ravel()))
    plain = RelatedNodes.from_lists(ancestors)
    with pytest.raises(ValueError, match="direct links"):
        RelatedNodes(plain.ancestor_ptr, plain.ancestors, plain.descendant_ptr, plain.descendants,
                     siblings=0.5)
