"""Vectorised negative sampling by corrupting one side of an edge."""

from __future__ import annotations

import numpy as np

from .closure import EdgeIndex, Hierarchy

__all__ = ["check_negatives", "sample_negatives", "sibling_negatives"]

_MAX_ROUNDS = 32  # rejection rounds before the exact fallback


def _as_index(known: Hierarchy | EdgeIndex) -> EdgeIndex:
    return known.index if isinstance(known, Hierarchy) else known


def check_negatives(edges: np.ndarray, known: Hierarchy | EdgeIndex, nodes, drop_root: bool = True):
    """Raises `ValueError` naming the first training edge that has no negative.

    A negative replaces one side of an edge by a node related to neither
    (the paper's rule, `sample_negatives`). When both nodes of an edge are
    an ancestor or a descendant of every node (the top of a hierarchy whose
    top node has a single child: `mammal is-a animal` in `dog, cat -> mammal
    -> animal`) there is none, and the trainers could not draw its
    negatives; this says so before training, by the nodes' names.

    Args:
        edges: `(n, 2)` training `(specific, general)` ids.
        known: what the sampler knows (`Hierarchy` or `EdgeIndex`).
        nodes: the node names, by id.
        drop_root: whether to suggest `--drop-root` when the general node is
            a top node.

    Example:
        >>> from keras_gauss.hierarchy.closure import hierarchy_from_parents
        >>> h = hierarchy_from_parents({"b": ["a"], "c": ["b"], "d": ["b"]})
        >>> check_negatives(h.edges, h, h.nodes)
        Traceback (most recent call last):
        ...
        ValueError: the is-a pair b -> a has no negative to train against: every node is an ancestor or a descendant of both b and a (a top node with a single child); give a node unrelated to them, or leave out the top node a (--drop-root a).
    """
    index = _as_index(known)
    free = index.num_nodes - 1 - index.num_ancestors - index.num_descendants
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    stuck = np.flatnonzero((free[edges[:, 0]] <= 0) & (free[edges[:, 1]] <= 0))
    if not len(stuck):
        return
    specific, general = (nodes[int(i)] for i in edges[stuck[0]])
    remedy = "give a node unrelated to them"
    if drop_root and index.num_ancestors[edges[stuck[0], 1]] == 0:
        remedy += f", or leave out the top node {general} (--drop-root {general})"
    raise ValueError(f"the is-a pair {specific} -> {general} has no negative to train against: "
                     f"every node is an ancestor or a descendant of both {specific} and "
                     f"{general} (a top node with a single child); {remedy}.")


def sample_negatives(
    edges: np.ndarray,
    known: Hierarchy | EdgeIndex,
    num_negatives: int = 1,
    *,
    corrupt: str = "either",
    exclude: str = "related",
    rng: np.random.Generator | int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Corrupt one side of each `(specific, general)` edge with a uniformly random node.

    Rejection sampling runs on the whole batch at once and then only on the rows
    that were rejected; after a few rounds the remaining (hard) rows are drawn
    exactly from the allowed nodes. If the chosen side cannot be corrupted at all
    (e.g. the kept node is the root, to which every node is related) the other side
    is corrupted instead when `corrupt="either"`.

    Args:
        edges: `(n, 2)` int array of `(specific, general)` = `(child, ancestor)` ids.
        known: The edges the sampler may know (`Hierarchy` or `EdgeIndex`),
            used to reject candidates; its node count is the sampling range. For
            training on a split this is the closure of the training edges
            (`EdgeSplit.train_index`); for evaluation negatives, the full hierarchy.
        num_negatives: Negatives `k` per edge.
        corrupt: `"either"` (a fair coin per negative), `"specific"` or `"general"`:
            the side that is replaced.
        exclude: `"related"` (the paper's rule for training: the new node is neither
            an ancestor nor a descendant of the kept node, nor the node itself) or
            `"edges"` (weaker, for evaluation: the corrupted pair is not an edge of
            `known` and not a self pair).
        rng: A `np.random.Generator` or a seed.

    Returns:
        `(neg_specific, neg_general)`, two int32 arrays of shape `(n, k)`;
        `(neg_specific[i, j], neg_general[i, j])` is the j-th negative of edge `i`.

    Raises:
        ValueError: If an edge has no valid negative on the allowed side(s).

    Example:
        >>> from keras_gauss.hierarchy.closure import hierarchy_from_parents
        >>> h = hierarchy_from_parents({"b": ["a"], "c": ["a"], "d": ["b"], "e": ["c"]})
        >>> edges = h.ids(["d", "b"]).reshape(1, 2)  # d is-a b
        >>> neg_s, neg_g = sample_negatives(edges, h, 4, rng=0)
        >>> neg_s.shape
        (1, 4)
        >>> new = np.where(neg_s == edges[0, 0], neg_g, neg_s)  # the replacement nodes
        >>> {h.nodes[i] for i in new.ravel()} <= {"c", "e"}  # unrelated to d and b
        True
    """
    if corrupt not in ("either", "specific", "general"):
        raise ValueError(f"corrupt must be 'either', 'specific' or 'general', not {corrupt!r}")
    if exclude not in ("related", "edges"):
        raise ValueError(f"exclude must be 'related' or 'edges', not {exclude!r}")
    if num_negatives < 1:
        raise ValueError("num_negatives must be >= 1")
    index = _as_index(known)
    rng = np.random.default_rng(rng)
    n = index.num_nodes
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    specific = np.repeat(edges[:, 0], num_negatives)
    general = np.repeat(edges[:, 1], num_negatives)
    m = len(specific)

    # How many nodes may replace the other side when a node is kept as specific / general.
    if exclude == "related":
        free = n - 1 - index.num_ancestors - index.num_descendants
        free_keep_specific = free_keep_general = free
    else:
        free_keep_specific = n - 1 - index.num_ancestors  # new general: not an ancestor
        free_keep_general = n - 1 - index.num_descendants  # new specific: not a descendant
    ok_specific_side = free_keep_general[general] > 0  # the specific side can be replaced
    ok_general_side = free_keep_specific[specific] > 0
    if corrupt == "either":
        replace_specific = rng.random(m) < 0.5
        replace_specific = np.where(replace_specific, ok_specific_side, ~ok_general_side)
        feasible = np.where(replace_specific, ok_specific_side, ok_general_side)
    else:
        replace_specific = np.full(m, corrupt == "specific")
        feasible = ok_specific_side if corrupt == "specific" else ok_general_side
    if not feasible.all():
        i = int(np.flatnonzero(~feasible)[0]) // num_negatives
        raise ValueError(f"edge {edges[i].tolist()} has no valid negative (corrupt={corrupt!r}, exclude={exclude!r})")

    kept = np.where(replace_specific, general, specific)

    def invalid(cand, kept, repl_spec):
        if exclude == "related":
            return index.related(cand, kept)
        child = np.where(repl_spec, cand, kept)
        parent = np.where(repl_spec, kept, cand)
        return (cand == kept) | index.contains(child, parent)

    new = rng.integers(n, size=m)
    todo = np.flatnonzero(invalid(new, kept, replace_specific))
    for _ in range(_MAX_ROUNDS):
        if not len(todo):
            break
        new[todo] = rng.integers(n, size=len(todo))
        todo = todo[invalid(new[todo], kept[todo], replace_specific[todo])]
    if len(todo):  # exact draw for nodes with few valid partners
        groups = kept[todo] * 2 + replace_specific[todo]
        for group in np.unique(groups):
            rows = todo[groups == group]
            node, repl_spec = divmod(int(group), 2)
            banned = [[node]]
            if exclude == "related" or not repl_spec:
                banned.append(index.ancestors(node))
            if exclude == "related" or repl_spec:
                banned.append(index.descendants(node))
            allowed = np.setdiff1d(np.arange(n), np.concatenate(banned))
            new[rows] = rng.choice(allowed, size=len(rows))

    neg_specific = np.where(replace_specific, new, specific).astype(np.int32)
    neg_general = np.where(replace_specific, general, new).astype(np.int32)
    return neg_specific.reshape(-1, num_negatives), neg_general.reshape(-1, num_negatives)


def sibling_negatives(
    edges: np.ndarray,
    known: Hierarchy | EdgeIndex,
    num_negatives: int = 1,
    *,
    direct: EdgeIndex | None = None,
    rounds: int = 8,
    rng: np.random.Generator | int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hard negatives: the general node of each `(c, p)` edge replaced by a sibling of `p`.

    A sibling of `p` is another child of one of `p`'s direct parents in
    `known` (a random direct parent, then a random child of it), kept only if
    it is unrelated to `c` in `known`. The specific side is never replaced:
    a sibling of `c` usually lies below `p` (it shares `c`'s parent), so
    it would be a positive. Everything comes from `known`: given a split's
    `train_index`, no held-out edge is seen.

    Args:
        edges: `(n, 2)` int array of `(specific, general)` ids.
        known: What the sampler may know (the closure of the training edges).
        num_negatives: Negatives `k` per edge.
        direct: The direct links of `known` as an `EdgeIndex`
            (`EdgeIndex(transitive_reduction(known), n)`); computed when `None`.
        rounds: Draws per negative before giving up on it.
        rng: A `np.random.Generator` or a seed.

    Returns:
        `(neg_specific, neg_general, found)`: int32 arrays of shape `(n, k)` and a
        bool array of the same shape; where `found` is False (`p` has no
        sibling unrelated to `c`) the row holds the edge itself and the caller
        must use another negative.

    Example:
        >>> from keras_gauss.hierarchy.closure import hierarchy_from_parents
        >>> h = hierarchy_from_parents({"b": ["a"], "c": ["a"], "d": ["b"], "e": ["c"]})
        >>> s, g, found = sibling_negatives(h.ids(["d", "b"]).reshape(1, 2), h, 3, rng=0)
        >>> [h.nodes[i] for i in g[0]], bool(found.all())  # b's sibling c, unrelated to d
        (['c', 'c', 'c'], True)
    """
    from .closure import transitive_reduction

    index = _as_index(known)
    rng = np.random.default_rng(rng)
    if direct is None:
        direct = EdgeIndex(transitive_reduction(index), index.num_nodes)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    specific = np.repeat(edges[:, 0], num_negatives)
    general = np.repeat(edges[:, 1], num_negatives)
    new = general.copy()
    found = np.zeros(len(general), dtype=bool)
    todo = np.flatnonzero(direct.num_ancestors[general] > 0)
    for _ in range(rounds):
        if not len(todo):
            break
        p = general[todo]
        pick = direct._anc_ptr[p] + (rng.random(len(todo)) * direct.num_ancestors[p]).astype(np.int64)
        q = direct._anc[pick]  # a direct parent of p
        pick = direct._desc_ptr[q] + (rng.random(len(todo)) * direct.num_descendants[q]).astype(np.int64)
        s = direct._desc[pick]  # a child of q
        ok = (s != p) & ~index.related(specific[todo], s)
        new[todo[ok]] = s[ok]
        found[todo[ok]] = True
        todo = todo[~ok]
    shape = (-1, num_negatives)
    return (specific.astype(np.int32).reshape(shape), new.astype(np.int32).reshape(shape),
            found.reshape(shape))
