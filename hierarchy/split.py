"""Train/validation/test splits of a hierarchy's edges, with the test sets a lookup cannot pass.

Two ways to hold edges out:

* ``"closure"`` (Vendrov et al., 2016): closure edges that are not in the
  transitive reduction. Every held-out edge follows from two training edges,
  so a lookup in the closure of the training edges scores 1.0.
* ``"reduction"``: edges of the transitive reduction. No other closure edge
  implies them, so the closure of the training edges does not contain them:
  the model has to predict what the training data does not say.

Each held-out positive is scored against three kinds of negatives (the
``parts`` of an :class:`EdgeSplit`): ``""`` one side replaced by a random node,
``"reversed"`` the edge turned around, and ``"sibling"`` the general node
replaced by one of its siblings.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .closure import EdgeIndex, Hierarchy, closure_index
from .negatives import sample_negatives

__all__ = ["DEFAULT_HELD_OUT", "EdgeSplit", "SPLITS", "default_size", "eligible_edges", "split_edges"]

_MAX_DEDUP_ROUNDS = 100

SPLITS = ("closure", "reduction")
DEFAULT_HELD_OUT = 4000
"""Held-out edges per part by default: the smaller of this and 10% of the eligible edges."""


@dataclass(frozen=True, eq=False)
class EdgeSplit:
    """Edges of one split; every array is int32 ``(n, 2)`` of ``(specific, general)`` ids.

    Attributes:
        train: Closure edges that are not held out (sorted as in the closure).
        val: Held-out positive validation edges.
        val_neg: One negative per validation edge, row-aligned with ``val``.
        test: Held-out positive test edges.
        test_neg: One negative per test edge, row-aligned with ``test``.
        num_nodes: Number of nodes of the hierarchy.
        method: ``"closure"`` or ``"reduction"`` (see the module docstring).
        val_sibling: Row-aligned with ``val``: the general node replaced by a
            sibling unrelated to the specific one; ``-1`` rows where none exists.
        test_sibling: The same for ``test``.
        eligible: Number of edges that could have been held out.
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

    @cached_property
    def train_index(self) -> EdgeIndex:
        """:class:`EdgeIndex` of the closure of the training edges: all a model may know."""
        return closure_index(self.train, self.num_nodes)

    def parts(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The evaluation sets as ``{name: (positives, negatives)}``.

        Names are ``val``/``test`` (random corruption), ``val_reversed``/
        ``test_reversed`` and ``val_sibling``/``test_sibling``; the sibling
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
    """Default held-out edges per part: ``min(4000, round(0.1 * eligible))``."""
    return min(DEFAULT_HELD_OUT, int(round(0.1 * eligible)))


def _keys(edges: np.ndarray, n: int) -> np.ndarray:
    return edges[:, 0].astype(np.int64) * n + edges[:, 1]


def _closure_candidates(hierarchy: Hierarchy) -> np.ndarray:
    basic = EdgeIndex(hierarchy.basic_edges, hierarchy.num_nodes)
    return np.flatnonzero(~basic.contains(hierarchy.edges[:, 0], hierarchy.edges[:, 1]))


def _reduction_candidates(hierarchy: Hierarchy) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``edges`` that are reduction edges, and each node's number of closure edges."""
    n = hierarchy.num_nodes
    edges = hierarchy.edges
    degree = np.bincount(edges[:, 0], minlength=n) + np.bincount(edges[:, 1], minlength=n)
    rows = np.searchsorted(_keys(edges, n), _keys(hierarchy.basic_edges, n))
    ok = (degree[edges[rows, 0]] >= 2) & (degree[edges[rows, 1]] >= 2)
    return rows[ok], degree


def eligible_edges(hierarchy: Hierarchy, method: str = "closure") -> int:
    """Number of edges ``method`` may hold out (before the default size is taken).

    ``"closure"``: closure edges outside the transitive reduction. ``"reduction"``:
    reduction edges whose two nodes keep another edge once it is held out.
    """
    if method == "closure":
        return len(_closure_candidates(hierarchy))
    if method == "reduction":
        return len(_reduction_candidates(hierarchy)[0])
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

    ``method="closure"`` draws the held-out positives uniformly among closure
    edges that are *not* in the transitive reduction, as Vendrov et al. (2016):
    each can be inferred from the training edges. ``method="reduction"`` draws
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
        hierarchy: The :class:`~keras_gauss.hierarchy.closure.Hierarchy` to split.
        val_size: Number of validation edges, a fraction (float in (0, 1)) of the
            eligible edges, or ``None``: the smaller of 4,000 and 10% of them.
        test_size: Same for the test edges.
        seed: Seed of the split and of the negatives.
        method: ``"closure"`` or ``"reduction"``.

    Returns:
        An :class:`EdgeSplit` (train edges keep the closure's sorted order).

    Raises:
        ValueError: If there are fewer eligible edges than ``val_size + test_size``.

    Example:
        >>> from keras_gauss.hierarchy.closure import build_hierarchy
        >>> h = build_hierarchy("mammal.n.01")  # all nouns: 4,000 + 4,000 held out
        >>> split = split_edges(h, val_size=500, test_size=500, seed=0)
        >>> len(h.edges), len(split.train), len(split.val), len(split.test)
        (6542, 5542, 500, 500)
    """
    edges = hierarchy.edges
    n = hierarchy.num_nodes
    rng = np.random.default_rng(seed)
    if method == "closure":
        candidates = _closure_candidates(hierarchy)
        what = "closure edges are not in the transitive reduction"
    elif method == "reduction":
        candidates, degree = _reduction_candidates(hierarchy)
        what = "edges of the transitive reduction can be held out without isolating a node"
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
    return EdgeSplit(
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
    )


def _pick_reduction(edges, candidates, degree, size, rng, what) -> np.ndarray:
    """``size`` candidate rows in random order, skipping any that would leave a node without edges."""
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


def _random_negatives(hierarchy: Hierarchy, positives: np.ndarray, rng) -> np.ndarray:
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
        raise ValueError("could not draw distinct negatives; the hierarchy is too small for these sizes")
    return np.stack([neg_s, neg_g], axis=1).astype(np.int32)


def _sibling_negatives(hierarchy: Hierarchy, positives: np.ndarray, rng) -> np.ndarray:
    """``(specific, sibling of general)`` per positive, uniform among siblings unrelated to the specific node."""
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
