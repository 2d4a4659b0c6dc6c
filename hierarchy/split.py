"""Train/validation/test splits of a hierarchy's edges, with the test sets a lookup cannot pass.

Two ways to hold edges out:

* `"closure"` (Vendrov et al., 2016): closure edges that are not in the
  transitive reduction. Every held-out edge follows from two training edges,
  so a lookup in the closure of the training edges scores 1.0.
* `"reduction"`: edges of the transitive reduction. No other closure edge
  implies them, so the closure of the training edges does not contain them:
  the model has to predict what the training data does not say.
* `"ganea"` (Ganea et al., 2018, dalab/hyperbolic_cones
  `split_wordnet_data.py`): 5% + 5% of the non-basic closure edges held
  out, training = the transitive reduction + a percentage of the other
  non-basic edges, ten negatives per held-out edge (`ganea_split`).

Each held-out positive is scored against three kinds of negatives (the
`parts` of an `EdgeSplit`): `""` one side replaced by a random node,
`"reversed"` the edge turned around, and `"sibling"` the general node
replaced by one of its siblings.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace
from functools import cached_property

import numpy as np

from .closure import EdgeIndex, Hierarchy, closure_index, transitive_reduction
from .negatives import sample_negatives

__all__ = ["DEFAULT_HELD_OUT", "EdgeSplit", "GANEA_HELD_OUT", "SPLITS", "default_size", "drop_root",
           "eligible_edges", "ganea_split", "split_edges", "MIN_VALIDATION", "with_training_pairs"]

_MAX_DEDUP_ROUNDS = 100

SPLITS = ("closure", "reduction", "ganea")
GANEA_HELD_OUT = 5.0
"""Percent of the non-basic edges held out for validation, and again for test, by `"ganea"`."""
GANEA_NEGATIVES = 5
"""Negatives per held-out edge and side (the child corrupted, the parent corrupted) by `"ganea"`."""
DEFAULT_HELD_OUT = 4000
"""Held-out edges per part by default: the smaller of this and 10% of the eligible edges."""


@dataclass(frozen=True, eq=False)
class EdgeSplit:
    """Edges of one split; every array is int32 `(n, 2)` of `(specific, general)` ids.

    Attributes:
        train: Closure edges that are not held out (sorted as in the closure).
        val: Held-out positive validation edges.
        val_neg: Negative validation pairs: one per validation edge, row-aligned
            with `val` (`"closure"`, `"reduction"`), or up to ten per edge
            (`"ganea"`), or as a file gives them (`"given"`).
        test: Held-out positive test edges.
        test_neg: Negative test pairs, as `val_neg`.
        num_nodes: Number of nodes of the hierarchy.
        method: `"closure"`, `"reduction"`, `"ganea"` (see the module
            docstring) or `"given"` (read from files,
            `keras_gauss.hierarchy.given_split.read_given_split`).
        val_sibling: Row-aligned with `val`: the general node replaced by a
            sibling unrelated to the specific one; `-1` rows where none exists.
        test_sibling: The same for `test`.
        eligible: Number of edges that could have been held out (`"ganea"`:
            the non-basic edges).
        num_basic: `"ganea"`: the basic edges (transitive reduction), all in
            `train`; else 0.
    """

    train: np.ndarray
    val: np.ndarray
    val_neg: np.ndarray
    test: np.ndarray
    test_neg: np.ndarray
    num_nodes: int = 0
    method: str = "closure"
    val_sibling: np.ndarray | None = None
    test_sibling: np.ndarray | None = None
    eligible: int = 0
    num_basic: int = 0

    @cached_property
    def train_index(self) -> EdgeIndex:
        """`EdgeIndex` of the closure of the training edges: all a model may know."""
        return closure_index(self.train, self.num_nodes)

    def parts(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The evaluation sets as `{name: (positives, negatives)}`.

        Names are `val`/`test` (random corruption), `val_reversed`/
        `test_reversed` and `val_sibling`/`test_sibling`; the sibling
        parts keep only the positives that have a sibling negative.
        """
        out = {}
        for name in ("val", "test"):
            pos = getattr(self, name)
            out[name] = (pos, getattr(self, f"{name}_neg"))
            out[f"{name}_reversed"] = (pos, np.ascontiguousarray(pos[:, ::-1]))
            sibling = getattr(self, f"{name}_sibling")
            if sibling is not None:
                keep = sibling[:, 0] >= 0
                out[f"{name}_sibling"] = (pos[keep], sibling[keep])
        return out


def _resolve_size(size: int | float | None, available: int, name: str) -> int:
    if size is None:
        return default_size(available)
    if isinstance(size, float) and 0 < size < 1:
        return int(round(size * available))
    if isinstance(size, (int, np.integer)) and size >= 0:
        return int(size)
    raise ValueError(f"{name} must be an int >= 0 or a float in (0, 1), not {size!r}")


def default_size(eligible: int) -> int:
    """Default held-out edges per part: `min(4000, round(0.1 * eligible))`."""
    return min(DEFAULT_HELD_OUT, int(round(0.1 * eligible)))


def _keys(edges: np.ndarray, n: int) -> np.ndarray:
    return edges[:, 0].astype(np.int64) * n + edges[:, 1]


def _closure_candidates(hierarchy: Hierarchy) -> np.ndarray:
    basic = EdgeIndex(hierarchy.basic_edges, hierarchy.num_nodes)
    return np.flatnonzero(~basic.contains(hierarchy.edges[:, 0], hierarchy.edges[:, 1]))


def _reduction_candidates(hierarchy: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    """Rows of `edges` that are reduction edges, and each node's number of closure edges."""
    n = hierarchy.num_nodes
    edges = hierarchy.edges
    degree = np.bincount(edges[:, 0], minlength=n) + np.bincount(edges[:, 1], minlength=n)
    rows = np.searchsorted(_keys(edges, n), _keys(hierarchy.basic_edges, n))
    ok = (degree[edges[rows, 0]] >= 2) & (degree[edges[rows, 1]] >= 2)
    return rows[ok], degree


def eligible_edges(hierarchy: Hierarchy, method: str = "closure") -> int:
    """Number of edges `method` may hold out (before the default size is taken).

    `"closure"`: closure edges outside the transitive reduction. `"reduction"`:
    reduction edges whose two nodes keep another edge once it is held out.
    """
    if method == "closure":
        return len(_closure_candidates(hierarchy))
    if method == "reduction":
        return len(_reduction_candidates(hierarchy)[0])
    if method == "ganea":
        return len(hierarchy.edges) - len(hierarchy.basic_edges)
    raise ValueError(f"--split must be one of {', '.join(SPLITS)}, got {method!r}.")


def split_edges(
    hierarchy: Hierarchy,
    *,
    val_size: int | float | None = None,
    test_size: int | float | None = None,
    seed: int = 0,
    method: str = "closure",
) -> EdgeSplit:
    """Hold out validation and test edges, each with a random, a reversed and a sibling negative.

    `method="closure"` draws the held-out positives uniformly among closure
    edges that are *not* in the transitive reduction, as Vendrov et al. (2016):
    each can be inferred from the training edges. `method="reduction"` draws
    them among edges *of* the transitive reduction, so none can be inferred;
    edges are taken in random order and skipped when holding one out would leave
    one of its nodes in no training edge. The training edges are all other
    closure edges (they stay transitively closed).

    Each held-out edge gets one negative made by replacing its specific or
    general node (a fair coin) with a random node such that the pair is neither
    an edge of the full closure nor a self pair (negatives are unique across
    validation and test), and one sibling negative: the general node replaced by
    a node sharing a direct parent with it, unrelated to the specific node.

    Args:
        hierarchy: The `keras_gauss.hierarchy.closure.Hierarchy` to split.
        val_size: Number of validation edges, a fraction (float in (0, 1)) of the
            eligible edges, or `None`: the smaller of 4,000 and 10% of them.
        test_size: Same for the test edges.
        seed: Seed of the split and of the negatives.
        method: `"closure"` or `"reduction"`.

    With word nodes (`build_hierarchy(include_lemmas=True)`), the held-out
    edges and their negatives are those of the synsets alone
    (`Hierarchy.synsets_only`, the same as without word nodes) and every
    word edge trains.

    Returns:
        An `EdgeSplit` (train edges keep the closure's sorted order).

    Raises:
        ValueError: If there are fewer eligible edges than `val_size + test_size`.

    Example:
        >>> from keras_gauss.hierarchy.closure import build_hierarchy
        >>> h = build_hierarchy("mammal.n.01")  # all nouns: 4,000 + 4,000 held out
        >>> split = split_edges(h, val_size=500, test_size=500, seed=0)
        >>> len(h.edges), len(split.train), len(split.val), len(split.test)
        (6542, 5542, 500, 500)
    """
    edges = hierarchy.edges
    n = hierarchy.num_nodes
    if hierarchy.synsets_only is not hierarchy:
        split = split_edges(hierarchy.synsets_only, val_size=val_size, test_size=test_size,
                            seed=seed, method=method)
        held_out = _keys(np.concatenate([split.val, split.test]), n)
        return _known_closure(replace(split, train=edges[~np.isin(_keys(edges, n), held_out)],
                                      num_nodes=n), hierarchy)
    rng = np.random.default_rng(seed)
    if method == "closure":
        candidates = _closure_candidates(hierarchy)
        what = "closure edges are not in the transitive reduction"
    elif method == "reduction":
        candidates, degree = _reduction_candidates(hierarchy)
        what = "edges of the transitive reduction can be held out without isolating a node"
    elif method == "ganea":
        raise ValueError("--split ganea holds out percentages of the non-basic edges: "
                         "use ganea_split(hierarchy, non_basic_percent).")
    else:
        raise ValueError(f"--split must be one of {', '.join(SPLITS)}, got {method!r}.")
    n_val = _resolve_size(val_size, len(candidates), "val_size")
    n_test = _resolve_size(test_size, len(candidates), "test_size")
    if n_val + n_test > len(candidates):
        raise ValueError(
            f"cannot hold out {n_val} + {n_test} edges: only {len(candidates)} {what} "
            f"(of {len(edges)}); pass smaller sizes or fractions, e.g. --val-size 0.1"
        )
    if method == "closure":
        picked = rng.choice(candidates, size=n_val + n_test, replace=False)
    else:
        picked = _pick_reduction(edges, candidates, degree, n_val + n_test, rng, what)
    val_rows, test_rows = np.sort(picked[:n_val]), np.sort(picked[n_val:])
    held_out = np.concatenate([val_rows, test_rows])
    positives = edges[held_out]
    negatives = _random_negatives(hierarchy, positives, rng)
    siblings = _sibling_negatives(hierarchy, positives, rng)

    train_mask = np.ones(len(edges), dtype=bool)
    train_mask[held_out] = False
    return _known_closure(EdgeSplit(
        train=edges[train_mask],
        val=edges[val_rows],
        val_neg=negatives[:n_val],
        test=edges[test_rows],
        test_neg=negatives[n_val:],
        num_nodes=n,
        method=method,
        val_sibling=siblings[:n_val],
        test_sibling=siblings[n_val:],
        eligible=len(candidates),
    ), hierarchy)


def _known_closure(split: EdgeSplit, hierarchy: Hierarchy) -> EdgeSplit:
    """`split` with its `train_index` set to the hierarchy's own when they
    are equal: on the closure split every edge of the transitive reduction
    trains, so the training edges' closure is the whole closure (computing
    it again took 3.9 s with word nodes)."""
    if split.method == "closure":
        split.__dict__["train_index"] = hierarchy.index  # the cached_property's value
    return split


def _pick_reduction(edges, candidates, degree, size, rng, what) -> np.ndarray:
    """`size` candidate rows in random order, skipping any that would leave a node without edges."""
    if size == 0:  # nothing held out (--val-size 0 --test-size 0, or a tiny taxonomy)
        return np.zeros(0, dtype=np.int64)
    left = degree.copy()
    picked = []
    for row in rng.permutation(candidates).tolist():
        c, p = edges[row]
        if left[c] >= 2 and left[p] >= 2:
            left[c] -= 1
            left[p] -= 1
            picked.append(row)
            if len(picked) == size:
                return np.asarray(picked, dtype=np.int64)
    raise ValueError(
        f"cannot hold out {size} edges: only {len(picked)} {what} together; "
        "pass smaller sizes or fractions, e.g. --val-size 0.1"
    )


def _random_negatives(hierarchy: Hierarchy, positives: np.ndarray, rng,
                      repeats: bool = False) -> np.ndarray:
    """One negative a positive (`exclude="edges"`), all distinct; `repeats`:
    distinct where the hierarchy has enough of them, else some repeated."""
    index = hierarchy.index
    neg_s, neg_g = (a[:, 0].astype(np.int64) for a in sample_negatives(positives, index, rng=rng, exclude="edges"))
    for _ in range(_MAX_DEDUP_ROUNDS):  # resample repeated negatives (rare)
        keys = neg_s * hierarchy.num_nodes + neg_g
        _, first = np.unique(keys, return_index=True)
        dup = np.setdiff1d(np.arange(len(keys)), first)
        if not len(dup):
            break
        s, g = sample_negatives(positives[dup], index, rng=rng, exclude="edges")
        neg_s[dup], neg_g[dup] = s[:, 0], g[:, 0]
    else:
        if not repeats:
            raise ValueError(
                f"could not draw {len(positives):,} distinct negatives for the {len(positives):,} "
                "held-out edges: the hierarchy has too few pairs that are not is-a edges; hold "
                "out fewer (--val-size, --test-size)")
    return np.stack([neg_s, neg_g], axis=1).astype(np.int32)


def _sibling_negatives(hierarchy: Hierarchy, positives: np.ndarray, rng) -> np.ndarray:
    """`(specific, sibling of general)` per positive, uniform among siblings unrelated to the specific node."""
    n = hierarchy.num_nodes
    basic = EdgeIndex(hierarchy.basic_edges, n)  # direct parents and children
    index = hierarchy.index
    out = np.full(positives.shape, -1, dtype=np.int32)
    for i, (c, p) in enumerate(positives.tolist()):
        parents = basic.ancestors(p)
        if not len(parents):
            continue
        siblings = np.unique(np.concatenate([basic.descendants(q) for q in parents]))
        siblings = siblings[siblings != p]
        siblings = siblings[~index.related(np.full(len(siblings), c), siblings)]
        if len(siblings):
            out[i] = c, rng.choice(siblings)
    return out


MIN_VALIDATION = 100
"""With fewer validation edges, thresholds and the best epoch are also chosen on the training edges."""


def with_training_pairs(split: EdgeSplit | None, hierarchy: Hierarchy, seed: int = 0,
                        minimum: int = MIN_VALIDATION, given: bool = False,
                        ) -> tuple[EdgeSplit | None, str | None]:
    """The pairs a run chooses its thresholds and best epoch on, and a warning when they are few.

    A threshold or an epoch chosen on a handful of validation pairs is
    chance: on a 43-edge taxonomy the default split holds out 5 + 5 edges,
    and many thresholds classify 5 pairs perfectly. With fewer than
    `minimum` validation edges, the training edges join them as positives,
    each with a random negative (one side replaced by a node unrelated to
    the other, never a held-out edge) and a sibling negative; the test
    edges stay untouched.

    Args:
        split: an `EdgeSplit`, or None (no held-out edges: returned as is).
        hierarchy: the hierarchy the split was made from.
        seed: seed of the training edges' negatives.
        minimum: validation edges needed to choose on them alone (default 100).
        given: the split came as files (`--train-edges`): the warning names the
            files, not `--val-size`/`--test-size` (default False).

    Returns:
        `(split, warning)`: `split` itself and None with enough validation
        edges, else a copy whose `val`, `val_neg` and `val_sibling` also
        hold the training pairs, and one line naming the sizes.

    Example:

    >>> from keras_gauss.hierarchy.synthetic import synthetic_hierarchy
    >>> h = synthetic_hierarchy()
    >>> small = split_edges(h, val_size=5, test_size=5, seed=0)
    >>> chosen_on, warning = with_training_pairs(small, h)
    >>> len(chosen_on.val) == 5 + len(small.train), warning.split(":")[0]
    (True, 'warning')
    """
    if split is None or len(split.val) >= minimum:
        return split, None
    rng = np.random.default_rng([seed, len(split.val)])
    train = np.asarray(split.train, np.int32)
    pooled = {"val": np.concatenate([split.val, train]),
              "val_neg": np.concatenate([split.val_neg,
                                         _random_negatives(hierarchy, train, rng, repeats=True)])}
    if split.val_sibling is not None:
        pooled["val_sibling"] = np.concatenate([split.val_sibling,
                                                _sibling_negatives(hierarchy, train, rng)])
    warning = (f"warning: only {len(split.val):,} validation and {len(split.test):,} test edges "
               f"(fewer than {minimum}): the thresholds and the best epoch are chosen on them "
               f"and the {len(train):,} training edges together, and the test figures are rough; "
               + ("larger --val-edges and --test-edges files give sounder ones" if given else
                  "a larger taxonomy or --val-size/--test-size give sounder ones"))
    return replace(split, **pooled), warning


def drop_root(hierarchy: Hierarchy, root: str) -> Hierarchy:
    """The hierarchy without the top node `root`, its edges and the nodes left without any.

    Ganea et al. drop `entity.n.01` from WordNet's nouns. Every other node
    keeps its closure edges; the nodes whose only direct parent was `root`
    become top nodes, and those that had no other edge at all (two in the
    mammal subtree, none among all nouns) go too: nothing could train them.

    Args:
        hierarchy: the `keras_gauss.hierarchy.closure.Hierarchy`.
        root: the name of a node without ancestors.

    Returns:
        A new `Hierarchy`, nodes in the same order.

    Raises:
        ValueError: `root` is not a node, or it has ancestors (one line naming it).

    Example:
        >>> from keras_gauss.hierarchy.closure import hierarchy_from_parents
        >>> h = hierarchy_from_parents({"dog": ["mammal"], "mammal": ["animal"], "rock": ["animal"]})
        >>> d = drop_root(h, "animal")  # rock had no other edge
        >>> d.nodes, d.edges.tolist()
        (('dog', 'mammal'), [[0, 1]])
    """
    r = hierarchy.node_ids.get(root)
    if r is None:
        raise ValueError(f"--drop-root {root!r} is not a node of the hierarchy.")
    index = hierarchy.index
    if index.num_ancestors[r]:
        raise ValueError(f"--drop-root {root!r} has ancestors: only a top node (one without "
                         "parents) can be dropped.")
    edges = hierarchy.edges[(hierarchy.edges != r).all(axis=1)]
    keep = np.zeros(hierarchy.num_nodes, dtype=bool)
    keep[edges.ravel()] = True
    new_id = np.cumsum(keep) - 1
    nodes = tuple(name for name, k in zip(hierarchy.nodes, keep.tolist()) if k)
    edges = new_id[edges].astype(np.int32)
    basic = transitive_reduction(EdgeIndex(edges, len(nodes)))
    num_synsets = int(keep[: hierarchy.num_synsets].sum())
    edges.flags.writeable = basic.flags.writeable = False
    return Hierarchy(nodes, edges, basic, num_synsets, hierarchy.root)


def ganea_split(hierarchy: Hierarchy, non_basic_percent: float, *, seed: int = 0,
                held_out_percent: float = GANEA_HELD_OUT) -> EdgeSplit:
    """The split of Ganea et al. (2018), as dalab/hyperbolic_cones `split_wordnet_data.py` makes it.

    The closure edges are divided into *basic* edges (the transitive
    reduction) and *non-basic* ones (implied by two others). Test: 5% of the
    non-basic edges, drawn at random; validation: 5% of them drawn from the
    rest; training: every basic edge plus `non_basic_percent` percent of
    the non-basic edges (a percentage of all of them), drawn from the rest.
    Nothing else is added to training. Each held-out edge `(c, p)` gets
    ten negatives, as published: five `(w, p)` with `w` neither `p` nor
    a descendant of `p` (the child corrupted) and five `(c, w)` with `w`
    neither `c` nor an ancestor of `c` (the parent corrupted), distinct
    within each five; none is an edge of the closure. (A side with fewer than
    five such nodes gets them all; a `p` that is an ancestor of every
    other node gets no child-corrupted negatives, as published.) For
    WordNet nouns, drop the root first (`drop_root`): 82,114 nodes,
    661,127 closure edges, 84,363 basic, as dalab's files.

    The held-out edges and their negatives depend on `seed` only, so every
    `non_basic_percent` of a seed shares them; the training sample is drawn
    from the stream `[seed, 1]`.

    Args:
        hierarchy: the hierarchy (its closure is the truth).
        non_basic_percent: percent of the non-basic edges added to training,
            `0 <= X <= 100 - 2 * held_out_percent` (the published 0, 10, 25, 50).
        seed: seed of the draws.
        held_out_percent: percent of the non-basic edges in validation, and in test.

    Returns:
        An `EdgeSplit` with `method="ganea"`: `train` sorted,
        `val_neg`/`test_neg` the negatives of all held-out edges (ten per
        edge, in edge order), `eligible` the number of non-basic edges and
        `num_basic` the basic ones; no sibling negatives.

    Raises:
        ValueError: a percentage out of range, or too few non-basic edges to
            hold one out (one line naming the setting).

    Example:
        >>> from keras_gauss.hierarchy.closure import build_hierarchy
        >>> h = drop_root(build_hierarchy("mammal.n.01"), "mammal.n.01")
        >>> s = ganea_split(h, 10, seed=0)
        >>> s.num_basic, s.eligible, len(s.train), len(s.val), len(s.test_neg)
        (1176, 4185, 1594, 209, 2090)
    """
    for name, value in (("--non-basic-percent", non_basic_percent),
                        ("held_out_percent", held_out_percent)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value):
            raise ValueError(f"{name} must be a number, got {value!r}.")
    limit = 100.0 - 2 * float(held_out_percent)
    if not 0 < held_out_percent < 50:
        raise ValueError(f"held_out_percent must lie in (0, 50), got {held_out_percent}.")
    if not 0 <= non_basic_percent <= limit:
        raise ValueError(f"--non-basic-percent must lie in [0, {limit:g}] (the percent of the "
                         f"non-basic edges added to training; {2 * held_out_percent:g}% are held "
                         f"out), got {non_basic_percent}.")
    n = hierarchy.num_nodes
    edges = hierarchy.edges
    basic = EdgeIndex(hierarchy.basic_edges, n)
    non_basic = np.flatnonzero(~basic.contains(edges[:, 0], edges[:, 1]))
    m = len(non_basic)
    size = int(held_out_percent * m / 100.0)
    if size < 1:
        raise ValueError(f"--split ganea holds out {held_out_percent:g}% of the non-basic edges "
                         f"(implied by two others): this hierarchy has {m}, too few to hold one "
                         "out; use a deeper hierarchy or --split closure.")
    rng = np.random.default_rng(seed)
    test_rows = rng.choice(non_basic, size, replace=False)
    rest = np.setdiff1d(non_basic, test_rows)
    val_rows = rng.choice(rest, size, replace=False)
    rest = np.setdiff1d(rest, val_rows)
    test_rows, val_rows = np.sort(test_rows), np.sort(val_rows)
    test_neg = _ganea_negatives(hierarchy, edges[test_rows], rng)
    val_neg = _ganea_negatives(hierarchy, edges[val_rows], rng)
    extra = np.random.default_rng([seed, 1]).choice(rest, int(non_basic_percent * m / 100.0),
                                                    replace=False)
    train_rows = np.sort(np.concatenate([np.flatnonzero(basic.contains(edges[:, 0], edges[:, 1])),
                                         extra]))
    return EdgeSplit(
        train=edges[train_rows],
        val=edges[val_rows],
        val_neg=val_neg,
        test=edges[test_rows],
        test_neg=test_neg,
        num_nodes=n,
        method="ganea",
        eligible=m,
        num_basic=len(hierarchy.basic_edges),
    )


def _distinct_draws(allowed_count, banned, num, n, rng) -> list[np.ndarray]:
    """Per row `i`, `min(num, allowed_count[i])` distinct nodes of `[0, n)` outside `banned(i)`."""
    out = []
    for i, free in enumerate(allowed_count.tolist()):
        k = min(num, free)
        if k <= 0:
            out.append(np.empty(0, np.int64))
            continue
        bad = banned(i)
        picked: list[int] = []
        for _ in range(_MAX_DEDUP_ROUNDS):
            cand = rng.integers(n, size=2 * num)
            for c in cand[~np.isin(cand, bad)].tolist():
                if c not in picked:
                    picked.append(c)
            if len(picked) >= k:
                break
        else:  # few allowed nodes: draw exactly among them
            allowed = np.setdiff1d(np.arange(n), bad)
            picked = rng.choice(allowed, k, replace=False).tolist()
        out.append(np.asarray(picked[:k], np.int64))
    return out


def _ganea_negatives(hierarchy: Hierarchy, positives: np.ndarray, rng) -> np.ndarray:
    """Five `(w, p)` (the child corrupted) then five `(c, w)` (the parent corrupted) per edge."""
    n = hierarchy.num_nodes
    index = hierarchy.index
    k = GANEA_NEGATIVES
    c, p = positives[:, 0].astype(np.int64), positives[:, 1].astype(np.int64)
    # Fast path: draw k per side at once, redraw the rows with a bad or repeated node.
    new_child = rng.integers(n, size=(len(p), k))
    new_parent = rng.integers(n, size=(len(c), k))

    def bad_rows(new, kept, corrupt_child):
        child = new if corrupt_child else kept[:, None]
        parent = kept[:, None] if corrupt_child else new
        bad = (new == kept[:, None]) | index.contains(np.broadcast_to(child, new.shape),
                                                      np.broadcast_to(parent, new.shape))
        srt = np.sort(new, axis=1)
        return bad.any(axis=1) | (srt[:, 1:] == srt[:, :-1]).any(axis=1)

    free_child = n - 1 - index.num_descendants[p]  # nodes w with (w, p) not an edge, w != p
    free_parent = n - 1 - index.num_ancestors[c]
    for new, kept, corrupt_child, free in ((new_child, p, True, free_child),
                                           (new_parent, c, False, free_parent)):
        todo = np.flatnonzero(bad_rows(new, kept, corrupt_child) & (free >= 2 * k))
        for _ in range(_MAX_DEDUP_ROUNDS):
            if not len(todo):
                break
            new[todo] = rng.integers(n, size=(len(todo), k))
            todo = todo[bad_rows(new[todo], kept[todo], corrupt_child)]
        slow = np.union1d(todo, np.flatnonzero(free < 2 * k))  # small hierarchies: exact draws
        if len(slow):
            related = index.descendants if corrupt_child else index.ancestors

            def banned(i):
                return np.append(related(int(kept[slow[i]])), kept[slow[i]])

            draws = _distinct_draws(free[slow], banned, k, n, rng)
            new[slow] = -1
            for row, drawn in zip(slow.tolist(), draws):
                new[row, : len(drawn)] = drawn
    child_side = np.stack([new_child, np.broadcast_to(p[:, None], new_child.shape)], axis=2)
    parent_side = np.stack([np.broadcast_to(c[:, None], new_parent.shape), new_parent], axis=2)
    neg = np.concatenate([child_side, parent_side], axis=1).reshape(-1, 2)
    return neg[(neg >= 0).all(axis=1)].astype(np.int32)
