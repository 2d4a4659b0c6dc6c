"""Transitive closure of the WordNet noun hierarchy (the data of Vendrov et al., 2016).

Nodes are synset names (`'dog.n.01'`) and, optionally, lowercased lemma names
(`'dog'`). An edge `(child, parent)` means *child is-a parent*, i.e.
`(specific, general)`. Over the hypernym and instance-hypernym links of all
82,115 noun synsets the closure has exactly 743,241 unique edges.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np

from .wordnet import read_synsets

__all__ = [
    "CycleError",
    "EdgeIndex",
    "Hierarchy",
    "build_hierarchy",
    "closure_index",
    "hierarchy_from_parents",
    "transitive_closure",
]


class CycleError(ValueError):
    """The is-a graph has a cycle; `cycle` names one, `[a, b, ..., a]` (a is-a b is-a ... a)."""

    def __init__(self, cycle: Sequence[str]):
        self.cycle = list(cycle)
        super().__init__("the is-a graph has a cycle: " + " -> ".join(map(str, self.cycle)))


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """`np.unique` for int64 keys, via one sort (much faster than NumPy 2's hash path)."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


# Lookups of at least this many pairs at once run in the native library where
# it builds (`keras_gauss.fused.pairs.contains`: binary searches in each
# node's short list; the lookups of a training epoch's negatives on WordNet's
# closure, 7.4 M candidates: 3.9 s -> 0.5 s); fewer, or without it, one
# `np.searchsorted`. The answers are the same.
NATIVE_LOOKUPS = 65536


class EdgeIndex:
    """Fast vectorised membership and ancestor/descendant lookups for a set of edges.

    Each edge `(child, parent)` is stored as the key `child * num_nodes + parent`
    in a sorted `int64` array, so membership of many pairs at once is one
    `np.searchsorted` (`NATIVE_LOOKUPS` pairs or more: the native library's
    search in the child's sorted list, where it builds). Ancestor and
    descendant lists are kept in CSR form.

    Args:
        edges: `(n, 2)` integer array of `(child, parent)` pairs (duplicates are fine).
        num_nodes: Number of nodes; every id must be in `[0, num_nodes)`.

    Example:
        >>> index = EdgeIndex(np.array([[1, 0], [2, 0], [2, 1]]), num_nodes=3)
        >>> index.contains([2, 0], [0, 2]).tolist()
        [True, False]
        >>> index.related([0, 1], [2, 1]).tolist()  # ancestor, descendant or itself
        [True, True]
        >>> index.descendants(0).tolist()
        [1, 2]
    """

    def __init__(self, edges: np.ndarray, num_nodes: int):
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        if edges.size and (edges.min() < 0 or edges.max() >= num_nodes):
            raise ValueError(f"edge ids must lie in [0, {num_nodes})")
        self.num_nodes = int(num_nodes)
        self.keys = _readonly(_sorted_unique(edges[:, 0] * num_nodes + edges[:, 1]))
        child, parent = np.divmod(self.keys, num_nodes)
        bounds = np.arange(num_nodes + 1)
        self._anc_ptr = np.searchsorted(child, bounds)  # keys are sorted by child first
        self._anc = parent.astype(np.int32)
        order = np.argsort(parent, kind="stable")
        self._desc_ptr = np.searchsorted(parent[order], bounds)
        self._desc = child[order].astype(np.int32)
        self.num_ancestors = _readonly(np.diff(self._anc_ptr))
        self.num_descendants = _readonly(np.diff(self._desc_ptr))

    def __len__(self) -> int:
        return len(self.keys)

    def contains(self, child, parent) -> np.ndarray:
        """Return a boolean array: is `(child[i], parent[i])` an edge?"""
        found = self._native(child, parent, either=False)
        if found is not None:
            return found
        keys = np.asarray(child, dtype=np.int64) * self.num_nodes + np.asarray(parent, dtype=np.int64)
        pos = np.searchsorted(self.keys, keys).clip(max=max(len(self.keys) - 1, 0))
        return (self.keys[pos] == keys) if len(self.keys) else np.zeros(keys.shape, bool)

    def related(self, a, b) -> np.ndarray:
        """Return a boolean array: is `a[i]` equal to, an ancestor of, or a descendant of `b[i]`?"""
        found = self._native(a, b, either=True)
        if found is not None:
            return found
        a, b = np.asarray(a), np.asarray(b)
        return (a == b) | self.contains(a, b) | self.contains(b, a)

    def _native(self, a, b, either):
        """`contains` (`related` with `either`) by the native library for
        `NATIVE_LOOKUPS` pairs or more where it builds, else None."""
        if max(np.size(a), np.size(b)) < NATIVE_LOOKUPS:
            return None
        from keras_gauss.fused import build

        if not build.native_available():
            return None
        from keras_gauss.fused import pairs

        return pairs.contains(self._anc_ptr, self._anc, a, b, either=either)

    def ancestors(self, node: int) -> np.ndarray:
        """Sorted ids of all ancestors of `node` (more general nodes)."""
        return self._anc[self._anc_ptr[node] : self._anc_ptr[node + 1]]

    def descendants(self, node: int) -> np.ndarray:
        """Sorted ids of all descendants of `node` (more specific nodes)."""
        return self._desc[self._desc_ptr[node] : self._desc_ptr[node + 1]]

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """`(ancestor_ptr, ancestors, descendant_ptr, descendants)`: node `i`'s
        sorted ancestors are `ancestors[ancestor_ptr[i]:ancestor_ptr[i + 1]]`,
        its descendants likewise (read-only views)."""
        return tuple(_readonly(a) for a in (self._anc_ptr, self._anc, self._desc_ptr,
                                            self._desc))


@dataclass(frozen=True, eq=False, repr=False)
class Hierarchy:
    """A DAG with its transitive closure.

    Attributes:
        nodes: Node names; the id of a node is its position. The first
            `num_synsets` nodes are synsets (sorted by name), any others are
            lemma (word) nodes (sorted by name).
        edges: `(n_edges, 2)` int32 array of unique `(child, ancestor)` pairs of
            the transitive closure, i.e. `(specific, general)`; no self loops;
            sorted by `child * num_nodes + ancestor`.
        basic_edges: `(n_basic, 2)` int32 array, the transitive reduction: the
            direct links (hypernym, instance hypernym, word-to-synset),
            deduplicated, minus any direct link `(c, p)` that is also implied
            by a longer path (`p` is an ancestor of another parent of `c`).
            Its closure is `edges`. Same order as `edges`.
        num_synsets: Number of synset nodes (all nodes unless lemmas were added).
        root: Root of the subtree, or `None` for the whole hierarchy.
    """

    nodes: tuple[str, ...]
    edges: np.ndarray
    basic_edges: np.ndarray
    num_synsets: int
    root: str | None = None

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @cached_property
    def node_ids(self) -> dict[str, int]:
        """Mapping from node name to id."""
        return {name: i for i, name in enumerate(self.nodes)}

    @cached_property
    def index(self) -> EdgeIndex:
        """`EdgeIndex` over the closure `edges` (for negative sampling)."""
        return EdgeIndex(self.edges, self.num_nodes)

    def ids(self, names: Iterable[str]) -> np.ndarray:
        """Return the int32 ids of the given node names (`KeyError` for unknown names)."""
        return np.array([self.node_ids[name] for name in names], dtype=np.int32)

    @cached_property
    def synsets_only(self) -> Hierarchy:
        """The hierarchy of the synset nodes alone, with the same ids: itself
        without lemma nodes (`build_hierarchy(include_lemmas=False)`'s
        hierarchy; word nodes are leaves, so no synset edge passes through
        one). Held-out edges, their negatives and reconstruction are drawn
        from it, so a run with word nodes is scored as the synset run is.

        Example:
            >>> h = hierarchy_from_parents({"b": ["a"], "w": ["b"]}, nodes=["a", "b", "w"],
            ...                            num_synsets=2)
            >>> h.synsets_only.nodes, h.synsets_only.edges.tolist()
            (('a', 'b'), [[1, 0]])
        """
        k = self.num_synsets
        if k == self.num_nodes:
            return self

        def among_synsets(edges):
            return _readonly(np.ascontiguousarray(edges[edges[:, 0] < k]))  # words are never parents

        return Hierarchy(self.nodes[:k], among_synsets(self.edges), among_synsets(self.basic_edges),
                         k, self.root)

    def __repr__(self) -> str:
        return (
            f"Hierarchy(root={self.root!r}, num_nodes={self.num_nodes}, num_synsets={self.num_synsets}, "
            f"edges={len(self.edges)}, basic_edges={len(self.basic_edges)})"
        )


def _edge_array(children: Sequence[int], parent_sets: Sequence[Iterable[int]], num_nodes: int) -> np.ndarray:
    counts = np.fromiter((len(s) for s in parent_sets), dtype=np.int64, count=len(parent_sets))
    child = np.repeat(np.asarray(children, dtype=np.int64), counts)
    parent = np.fromiter(chain.from_iterable(parent_sets), dtype=np.int64, count=int(counts.sum()))
    keys = np.sort(child * num_nodes + parent)  # unique: each parent set has no repeats
    return np.stack(np.divmod(keys, num_nodes), axis=1).astype(np.int32)


def hierarchy_from_parents(
    parents: Mapping[str, Iterable[str]],
    *,
    root: str | None = None,
    nodes: Sequence[str] | None = None,
    num_synsets: int | None = None,
) -> Hierarchy:
    """Build the transitive closure of a DAG given each node's direct parents.

    Ancestor sets are computed once per node in topological order (parents
    before children) as the union of the parents' sets, so the cost is linear in
    the closure size (~0.5 s for WordNet nouns).

    Args:
        parents: Mapping `node -> direct parents` (more general nodes). Nodes that
            only appear as parents are added too.
        root: If given, keep only `root` and its descendants, with the closure
            restricted to them.
        nodes: Optional node order (must name every node); default: sorted names.
        num_synsets: Number of leading `nodes` that are synsets (default: all).

    Returns:
        A `Hierarchy`.

    Raises:
        ValueError: On a cycle or self loop, an unknown `root`, or a `root`
            without descendants ("empty subtree").

    Example:
        >>> h = hierarchy_from_parents({"dog": ["mammal"], "cat": ["mammal"], "mammal": ["animal"]})
        >>> h.nodes
        ('animal', 'cat', 'dog', 'mammal')
        >>> h.edges.tolist()  # (child, ancestor) ids
        [[1, 0], [1, 3], [2, 0], [2, 3], [3, 0]]
        >>> h.basic_edges.tolist()
        [[1, 3], [2, 3], [3, 0]]
    """
    if nodes is None:
        nodes = sorted(set(parents).union(*map(set, parents.values())))
    nodes = tuple(nodes)
    ids = {name: i for i, name in enumerate(nodes)}
    if len(ids) != len(nodes):
        raise ValueError("duplicate node names")
    n = len(nodes)
    num_synsets = n if num_synsets is None else num_synsets
    if root is not None and root not in ids:
        raise ValueError(f"unknown root node {root!r}")

    direct: list[tuple[int, ...]] = [()] * n
    for name, ps in parents.items():
        direct[ids[name]] = tuple(dict.fromkeys(ids[p] for p in ps))  # dedupe, keep order
        if ids[name] in direct[ids[name]]:
            raise ValueError(f"self loop at {name!r}")
    children: list[list[int]] = [[] for _ in range(n)]
    for child, ps in enumerate(direct):
        for p in ps:
            children[p].append(child)

    if root is not None:
        # Every node on a path between two subtree nodes is in the subtree, so the
        # closure of the restricted graph is the restricted closure.
        r = ids[root]
        if not children[r]:
            raise ValueError(f"empty subtree: root {root!r} has no descendants")
        keep = np.zeros(n, dtype=bool)
        keep[r] = True
        stack = [r]
        while stack:
            for c in children[stack.pop()]:
                if not keep[c]:
                    keep[c] = True
                    stack.append(c)
        new_id, kept = (np.cumsum(keep) - 1).tolist(), np.flatnonzero(keep).tolist()
        direct = [tuple(new_id[p] for p in direct[v] if keep[p]) for v in kept]
        children = [[new_id[c] for c in children[v]] for v in kept]
        nodes = tuple(nodes[v] for v in kept)
        num_synsets = int(keep[:num_synsets].sum())
        n = len(nodes)

    ancestors = _ancestor_sets(direct, children, nodes)

    # Transitive reduction: drop a direct parent that is an ancestor of another parent.
    basic = [
        [p for p in ps if not any(p in ancestors[q] for q in ps if q != p)] if len(ps) > 1 else ps
        for ps in direct
    ]
    edges = _edge_array(range(n), ancestors, n)
    basic_edges = _edge_array(range(n), basic, n)

    return Hierarchy(nodes, _readonly(edges), _readonly(basic_edges), num_synsets, root)


def _ancestor_sets(direct, children, nodes) -> list[frozenset[int]]:
    """Every node's ancestor set, parents before children (Kahn's algorithm); `CycleError` on a cycle."""
    n = len(direct)
    waiting = [len(ps) for ps in direct]
    ready = [v for v in range(n) if not waiting[v]]
    ancestors: list[frozenset[int]] = [frozenset()] * n
    done = 0
    while ready:
        v = ready.pop()
        done += 1
        ps = direct[v]
        if len(ps) == 1:
            ancestors[v] = ancestors[ps[0]].union(ps)
        elif ps:
            ancestors[v] = frozenset(ps).union(*(ancestors[p] for p in ps))
        for c in children[v]:
            waiting[c] -= 1
            if not waiting[c]:
                ready.append(c)
    if done != n:
        raise CycleError([nodes[v] for v in _find_cycle(direct, waiting)])
    return ancestors


def _find_cycle(direct: Sequence[Sequence[int]], waiting: Sequence[int]) -> list[int]:
    """One cycle among the nodes Kahn's algorithm left waiting (each has a waiting parent)."""
    v = next(v for v in range(len(waiting)) if waiting[v])
    seen: dict[int, int] = {}
    path: list[int] = []
    while v not in seen:
        seen[v] = len(path)
        path.append(v)
        v = next(p for p in direct[v] if waiting[p])
    return path[seen[v]:] + [v]


def transitive_closure(edges: np.ndarray, num_nodes: int) -> np.ndarray:
    """The transitive closure of any `(child, parent)` edge array, as sorted unique int32 edges.

    Args:
        edges: `(n, 2)` integer array of `(specific, general)` ids (duplicates are fine).
        num_nodes: Number of nodes; ids lie in `[0, num_nodes)`.

    Returns:
        `(m, 2)` int32 edges sorted by `child * num_nodes + parent`, no self pairs.

    Raises:
        CycleError: If the edges have a cycle (named by node ids).

    Example:
        >>> transitive_closure(np.array([[2, 1], [1, 0]]), 3).tolist()
        [[1, 0], [2, 0], [2, 1]]
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    keys = _sorted_unique(edges[:, 0] * num_nodes + edges[:, 1])
    child, parent = np.divmod(keys, num_nodes)
    if (child == parent).any():
        raise CycleError([int(child[child == parent][0])] * 2)
    bounds = np.searchsorted(child, np.arange(num_nodes + 1)).tolist()
    parent_list = parent.tolist()
    direct = [parent_list[bounds[i] : bounds[i + 1]] for i in range(num_nodes)]
    children: list[list[int]] = [[] for _ in range(num_nodes)]
    for c, p in zip(child.tolist(), parent_list):
        children[p].append(c)
    ancestors = _ancestor_sets(direct, children, range(num_nodes))
    return _edge_array(range(num_nodes), ancestors, num_nodes)


def closure_index(edges: np.ndarray, num_nodes: int) -> EdgeIndex:
    """`EdgeIndex` over the transitive closure of `edges` (e.g. a split's training edges).

    Example:
        >>> closure_index(np.array([[2, 1], [1, 0]]), 3).contains([2], [0]).tolist()
        [True]
    """
    return EdgeIndex(transitive_closure(edges, num_nodes), num_nodes)


# WordNet's parts of speech (a synset name's middle letter) and a root of each to embed
_POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
_ROOT_EXAMPLES = {"n": "mammal.n.01", "v": "change.v.01"}


def _unknown_root(root, pos, synsets=()):
    """The error of a `--root` that is not a synset of part of speech `pos`:
    one of another part of speech (its name's middle letter), a word (its
    synsets of `synsets` named), a misspelt name (the closest named), or none."""
    kind, example = _POS_NAMES[pos], _ROOT_EXAMPLES[pos]
    parts = root.rsplit(".", 2)
    other = parts[1] if len(parts) == 3 and parts[2].isdigit() else None
    if other in _POS_NAMES and other != pos:
        switch = f", or --pos {other} to embed {_POS_NAMES[other]}s" if other in _ROOT_EXAMPLES \
            else ""
        return ValueError(f"--root {root!r} is {'an' if other in 'ar' else 'a'} "
                          f"{_POS_NAMES[other]} synset, but --pos {pos} embeds WordNet's "
                          f"{kind}s: give a {kind} synset such as {example!r}{switch}.")
    word = root.strip().lower().replace(" ", "_")
    senses = sorted((s.name for s in synsets if word in {lemma.lower() for lemma in s.lemmas}),
                    key=lambda name: (name.rsplit(".", 2)[0] != word, name))
    if senses:
        listed = ", ".join(map(repr, senses[:6])) + (
            f" and {len(senses) - 6} more" if len(senses) > 6 else "")
        return ValueError(f"--root {root!r} is a word, not a synset name; its {kind} synsets: "
                          f"{listed}.")
    close = difflib.get_close_matches(root, [s.name for s in synsets], n=1, cutoff=0.9)
    hint = f"; did you mean {close[0]!r}?" if close else "."
    return ValueError(f"--root {root!r} is not a WordNet {kind} synset (expected a synset "
                      f"name such as {example!r}){hint}")


@functools.lru_cache(maxsize=8)
def _build_cached(root, include_lemmas, data_dir, pos="n") -> Hierarchy:
    synsets = read_synsets(data_dir, pos)
    parents = {s.name: s.hypernyms for s in synsets}
    if root is not None and root not in parents:
        raise _unknown_root(root, pos, synsets)
    nodes = sorted(parents)
    if include_lemmas:
        if root is not None:
            _build_cached(root, False, data_dir, pos)  # a root without synsets below: "empty subtree"
        words: dict[str, list[str]] = {}
        for s in synsets:
            for lemma in s.lemmas:
                words.setdefault(lemma.lower(), []).append(s.name)
        clash = sorted(set(words) & set(parents))
        if clash:
            raise ValueError(f"lemma names clash with synset names: {clash[:5]}")
        parents.update(words)
        nodes += sorted(words)
    return hierarchy_from_parents(parents, root=root, nodes=nodes, num_synsets=len(synsets))


def build_hierarchy(
    root: str | None = None,
    *,
    include_lemmas: bool = False,
    data_dir: str | os.PathLike | None = None,
    pos: str = "n",
) -> Hierarchy:
    """Transitive closure of the WordNet 3.0 noun hierarchy (hypernyms ∪ instance hypernyms), or of its verbs.

    Results are memoised (arrays are read-only), so repeated calls are free.

    Args:
        root: Optional synset name, e.g. `"mammal.n.01"`: keep only the root and
            all its descendants (following hyponyms and instance hyponyms), with
            the closure restricted to them.
        include_lemmas: Also add one node per lowercased lemma name (`'dog'`,
            `'domestic_dog'`, `'canis_familiaris'`; synset names always end in
            `.n.NN` so they cannot collide), with edges `(word, synset)` to every
            synset the word belongs to and `(word, a)` to every ancestor `a` of
            those synsets. With `root`, only words of synsets inside the subtree
            are kept, and only their edges into the subtree.
        data_dir: Optional NLTK-style data directory (see `keras_gauss.hierarchy.wordnet.load_wordnet`).
        pos: `"n"` (nouns) or `"v"` (verbs: 13,767 synsets under many roots).

    Returns:
        A `Hierarchy`. Without `root`/lemmas: 82,115 nodes, 743,241 edges.

    Raises:
        ValueError: Unknown `root` or a root without descendants ("empty subtree").
        keras_gauss.hierarchy.wordnet.WordNetUnavailableError: WordNet cannot be found.

    Example:
        >>> h = build_hierarchy("mammal.n.01")
        >>> h.index.contains(*h.ids(["dog.n.01", "mammal.n.01"])).item()
        True
    """
    if data_dir is not None:
        data_dir = os.path.abspath(os.path.expanduser(data_dir))
    if pos not in ("n", "v"):
        raise ValueError(f"--pos must be 'n' (nouns) or 'v' (verbs), got {pos!r}.")
    return _build_cached(root, bool(include_lemmas), data_dir, pos)


def transitive_reduction(index: EdgeIndex) -> np.ndarray:
    """The direct links of a transitively closed edge set: `(c, p)` with no `q` between them.

    An edge `(c, p)` of the closure is implied, and dropped, when `c` has an
    ancestor `q` of which `p` is an ancestor; such a `q` can be taken among
    `c`'s direct parents. Vectorised: those are among `c`'s ancestor with
    the most ancestors (always direct) and the ancestors not above it, and
    one pass goes over the pairs (such an edge, ancestor of its parent):
    about the closure's size on a tree of any depth (every ancestor of every
    edge's parent grew with the depth cubed: 52 GiB on a 30,000-node
    taxonomy 1,200 levels deep).

    Args:
        index: `EdgeIndex` of a transitively closed edge set, e.g. a
            split's `train_index` (the closure of the training edges).

    Returns:
        `(m, 2)` int32 `(child, parent)` edges, sorted as `index.keys`.

    Example:
        >>> transitive_reduction(closure_index(np.array([[2, 1], [1, 0]]), 3)).tolist()
        [[1, 0], [2, 1]]
    """
    n = index.num_nodes
    if not len(index):
        return np.zeros((0, 2), np.int32)
    child, parent = np.divmod(index.keys, n)
    # each child's ancestor with the most ancestors: nothing lies between them
    order = np.lexsort((index.num_ancestors[parent], child))
    last = order[np.flatnonzero(np.append(child[order][1:] != child[order][:-1], True))]
    top = np.zeros(n, np.int64)
    top[child[last]] = parent[last]
    # c's direct parents are among its top and the ancestors not above it
    maybe = (parent == top[child]) | ~index.contains(top[child], parent)
    below, above = child[maybe], parent[maybe]
    counts = index.num_ancestors[above]  # ancestors of each such edge's parent
    starts = np.repeat(index._anc_ptr[above] - np.cumsum(counts) + counts, counts)
    implied = _sorted_unique(np.repeat(below, counts) * n
                             + index._anc[starts + np.arange(counts.sum())])
    direct = ~np.isin(index.keys, implied, assume_unique=True)
    return np.stack([child[direct], parent[direct]], axis=1).astype(np.int32)
