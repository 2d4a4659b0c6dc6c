import numpy as np
import pytest

from keras_gauss.hierarchy import EdgeIndex, build_hierarchy, hierarchy_from_parents
from keras_gauss.hierarchy.closure import closure_index, transitive_reduction


def named(h, edges):
    return {(h.nodes[a], h.nodes[b]) for a, b in edges.tolist()}


def closure_by_bfs(parents):
    out = set()
    for node in parents:
        stack, seen = list(parents[node]), set()
        while stack:
            p = stack.pop()
            if p not in seen:
                seen.add(p)
                stack.extend(parents.get(p, ()))
        out |= {(node, p) for p in seen}
    return out


TOY = {"b": ["a"], "c": ["a", "b"], "d": ["c", "b"], "e": ["d"], "x": ["y"]}


def test_toy_closure_and_reduction():
    h = hierarchy_from_parents(TOY)
    assert h.nodes == ("a", "b", "c", "d", "e", "x", "y")
    assert named(h, h.edges) == closure_by_bfs(TOY)
    # c->a and d->b are implied by longer paths (c->b->a, d->c->b)
    assert named(h, h.basic_edges) == {("b", "a"), ("c", "b"), ("d", "c"), ("e", "d"), ("x", "y")}
    assert h.edges.dtype == np.int32 and h.edges.shape[1] == 2
    assert not h.edges.flags.writeable


def test_toy_subtree():
    h = hierarchy_from_parents(TOY, root="b")
    assert h.nodes == ("b", "c", "d", "e")
    assert named(h, h.edges) == {p for p in closure_by_bfs(TOY) if p[0] in h.nodes and p[1] in h.nodes}


@pytest.mark.parametrize(
    "parents, message",
    [({"a": ["b"], "b": ["a"]}, "cycle"), ({"a": ["a"]}, "self loop")],
)
def test_bad_graphs(parents, message):
    with pytest.raises(ValueError, match=message):
        hierarchy_from_parents(parents)


def test_cycle_error_names_one_cycle():
    from keras_gauss.hierarchy.closure import CycleError

    with pytest.raises(CycleError) as error:
        hierarchy_from_parents({"x": ["a"], "a": ["b"], "b": ["c"], "c": ["a"], "d": ["x"]})
    cycle = error.value.cycle
    assert cycle[0] == cycle[-1] and sorted(cycle[:-1]) == ["a", "b", "c"]
    # each step is a parent link
    links = {("a", "b"), ("b", "c"), ("c", "a")}
    assert all(step in links for step in zip(cycle[:-1], cycle[1:]))


def test_wordnet_verbs():
    from keras_gauss.hierarchy import build_hierarchy

    verbs = build_hierarchy(pos="v")
    assert (verbs.num_nodes, len(verbs.edges), len(verbs.basic_edges)) == (13767, 35079, 13235)
    run = verbs.node_ids
    assert verbs.index.contains([run["sprint.v.01"]], [run["run.v.01"]]).item()
    with pytest.raises(ValueError, match="--pos"):
        build_hierarchy(pos="a")


def test_edge_index():
    h = hierarchy_from_parents(TOY)
    a, b, c, d, e, x, y = range(7)
    index = EdgeIndex(np.concatenate([h.edges, h.edges]), h.num_nodes)  # duplicates are fine
    assert len(index) == len(h.edges)
    assert index.contains([e, e, a, x], [a, x, e, y]).tolist() == [True, False, False, True]
    assert index.related([a, e, c, x], [e, a, c, a]).tolist() == [True, True, True, False]
    assert index.ancestors(e).tolist() == [a, b, c, d]
    assert index.descendants(b).tolist() == [c, d, e]
    assert index.num_descendants[a] == 4 and index.num_ancestors[a] == 0


@pytest.mark.parametrize("lookups", [1, 10**9], ids=["native", "numpy"])
def test_edge_index_lookups_native_and_numpy(monkeypatch, lookups):
    from keras_gauss.fused.native import native_available
    from keras_gauss.hierarchy import closure

    if lookups == 1 and not native_available():
        pytest.skip("no C++ compiler")
    monkeypatch.setattr(closure, "NATIVE_LOOKUPS", lookups)
    rng = np.random.default_rng(0)
    n = 40
    edges = np.unique(rng.integers(0, n, size=(200, 2)), axis=0)
    edges = edges[edges[:, 0] != edges[:, 1]]
    index = EdgeIndex(np.concatenate([edges, edges[::-1]]), n)  # duplicates, unsorted
    pairs = {tuple(edge) for edge in edges.tolist()}
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    contains = np.array([[(i, j) in pairs for j in range(n)] for i in range(n)])
    assert (index.contains(a, b) == contains).all()
    assert (index.related(a, b) == (contains | contains.T | np.eye(n, dtype=bool))).all()
    assert index.contains(a[:, 0], 3).shape == (n,)  # broadcast
    assert index.contains(np.array([], np.int64), np.array([], np.int64)).shape == (0,)


def test_full_wordnet_counts(full):
    assert full.num_nodes == full.num_synsets == 82_115
    assert len(full.edges) == 743_241
    keys = full.edges[:, 0].astype(np.int64) * full.num_nodes + full.edges[:, 1]
    assert len(np.unique(keys)) == len(keys)
    assert not (full.edges[:, 0] == full.edges[:, 1]).any()
    assert full.index.contains(full.basic_edges[:, 0], full.basic_edges[:, 1]).all()
    assert len(full.basic_edges) == 84_366  # 84,427 direct links, 61 implied by longer paths
    entity = full.node_ids["entity.n.01"]
    assert len(full.index.ancestors(entity)) == 0
    assert len(full.index.descendants(entity)) == full.num_nodes - 1
    ids = full.ids(["dog.n.01", "mammal.n.01", "entity.n.01"])
    assert full.index.contains(ids[[0, 0, 1]], ids[[1, 2, 2]]).all()
    assert not full.index.contains(ids[1], ids[0])


def test_basic_edges_generate_the_closure(mammal):
    parents = {}
    for child, parent in mammal.basic_edges.tolist():
        parents.setdefault(mammal.nodes[child], []).append(mammal.nodes[parent])
    rebuilt = hierarchy_from_parents(parents, nodes=mammal.nodes)
    assert np.array_equal(rebuilt.edges, mammal.edges)
    assert np.array_equal(rebuilt.basic_edges, mammal.basic_edges)


def test_mammal_subtree(full, mammal):
    assert mammal.root == "mammal.n.01"
    assert mammal.num_nodes == 1182 and len(mammal.edges) == 6542
    root = full.node_ids["mammal.n.01"]
    expected = {full.nodes[i] for i in full.index.descendants(root)} | {"mammal.n.01"}
    assert set(mammal.nodes) == expected
    edges = named(mammal, mammal.edges)
    assert ("dog.n.01", "mammal.n.01") in edges
    assert ("dog.n.01", "canine.n.02") in edges
    assert not any(parent == "animal.n.01" for _, parent in edges)
    # exactly the full closure restricted to the subtree
    sub = full.ids(mammal.nodes)
    in_sub = np.isin(full.edges, sub).all(axis=1)
    assert named(full, full.edges[in_sub]) == edges


def test_bad_roots():
    with pytest.raises(ValueError, match="no_such.n.01"):
        build_hierarchy("no_such.n.01")
    with pytest.raises(ValueError, match="empty subtree"):
        build_hierarchy("toy_poodle.n.01")


@pytest.mark.parametrize("root, pos, message", [
    ("Dog", "n", "--root 'Dog' is a word, not a synset name; its noun synsets: 'dog.n.01', "
     "'dog.n.03', 'andiron.n.01', 'cad.n.01', 'frank.n.02', 'frump.n.01' and 1 more."),
    ("hot dog", "n", "its noun synsets: 'frank.n.02', 'hotdog.n.01', 'hotdog.n.02'."),
    ("run", "v", "--root 'run' is a word, not a synset name; its verb synsets: 'run.v.01', "),
    ("mamal.n.01", "n", "--root 'mamal.n.01' is not a WordNet noun synset (expected a synset "
     "name such as 'mammal.n.01'); did you mean 'mammal.n.01'?"),
    ("xyzzy.n.01", "n", "--root 'xyzzy.n.01' is not a WordNet noun synset (expected a synset "
     "name such as 'mammal.n.01')."),
])
def test_a_root_that_is_a_word_or_misspelt_names_the_synsets_meant(root, pos, message):
    with pytest.raises(ValueError) as error:
        build_hierarchy(root, pos=pos)
    assert message in str(error.value)


def test_lemma_nodes():
    h = build_hierarchy("mammal.n.01", include_lemmas=True)
    assert h.num_synsets == 1182
    words = h.nodes[h.num_synsets :]
    assert "dog" in words and "canis_familiaris" in words
    assert all(w == w.lower() and ".n." not in w for w in words)
    assert all(".n." in s for s in h.nodes[: h.num_synsets])
    edges = named(h, h.edges)
    assert {("dog", "dog.n.01"), ("dog", "mammal.n.01"), ("domestic_dog", "canine.n.02")} <= edges
    assert ("dog", "dog.n.01") in named(h, h.basic_edges)
    assert ("dog", "mammal.n.01") not in named(h, h.basic_edges)
    # no edge points to a word, and the synset part equals the lemma-free hierarchy
    assert (h.edges[:, 1] < h.num_synsets).all()
    synset_edges = h.edges[h.edges[:, 0] < h.num_synsets]
    assert named(h, synset_edges) == named(build_hierarchy("mammal.n.01"), build_hierarchy("mammal.n.01").edges)


def test_synsets_only_is_the_hierarchy_without_word_nodes():
    words, synsets = build_hierarchy("mammal.n.01", include_lemmas=True), build_hierarchy("mammal.n.01")
    only = words.synsets_only
    assert only.nodes == synsets.nodes and only.num_synsets == synsets.num_nodes
    for field in ("edges", "basic_edges"):
        assert np.array_equal(getattr(only, field), getattr(synsets, field)), field
    assert synsets.synsets_only is synsets


def test_a_root_with_only_words_below_is_an_empty_subtree():
    with pytest.raises(ValueError, match="empty subtree"):  # not a tree of its own words
        build_hierarchy("toy_poodle.n.01", include_lemmas=True)


def _brute_reduction(index):
    """Closure edges `(c, p)` with no node `q` such that `c < q < p`."""
    edges = {tuple(e) for e in np.stack(np.divmod(index.keys, index.num_nodes), 1).tolist()}
    return sorted((c, p) for c, p in edges
                  if not any((c, q) in edges and (q, p) in edges for q in range(index.num_nodes)))


def test_transitive_reduction_of_random_dags():
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 25))
        a, b = rng.integers(0, n, (2, int(rng.integers(0, 3 * n + 1))))
        keep = a != b
        index = closure_index(np.stack([np.maximum(a, b), np.minimum(a, b)], 1)[keep], n)
        assert [tuple(e) for e in transitive_reduction(index).tolist()] == _brute_reduction(index)


def test_transitive_reduction_of_a_deep_taxonomy_needs_little_memory():
    """A chain 400 levels deep (79,800 closure edges): every ancestor of
    every edge's parent would be 10.6 M pairs, hundreds of MiB; the
    reduction stays near the closure's size."""
    import tracemalloc

    n = 400
    index = closure_index(np.stack([np.arange(1, n), np.arange(n - 1)], 1), n)
    tracemalloc.start()
    try:
        direct = transitive_reduction(index)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert direct.tolist() == [[c, c - 1] for c in range(1, n)]
    assert peak < 40 * 2**20
