"""Train/validation/test split of closure edges (Vendrov et al., 2016)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .closure import EdgeIndex, Hierarchy
from .negatives import sample_negatives

__all__ = ["EdgeSplit", "split_edges"]

_MAX_DEDUP_ROUNDS = 100


@dataclass(frozen=True, eq=False)
class EdgeSplit:
    """Edges of one split; every array is int32 ``(n, 2)`` of ``(specific, general)`` ids.

    Attributes:
        train: Closure edges that are not held out (all basic edges among them).
        val: Held-out positive validation edges.
        val_neg: One negative per validation edge, row-aligned with ``val``.
        test: Held-out positive test edges.
        test_neg: One negative per test edge, row-aligned with ``test``.
    """

    train: np.ndarray
    val: np.ndarray
    val_neg: np.ndarray
    test: np.ndarray
    test_neg: np.ndarray


def _resolve_size(size: int | float, available: int, name: str) -> int:
    if isinstance(size, float) and 0 < size < 1:
        return int(round(size * available))
    if isinstance(size, (int, np.integer)) and size >= 0:
        return int(size)
    raise ValueError(f"{name} must be an int >= 0 or a float in (0, 1), not {size!r}")


def split_edges(
    hierarchy: Hierarchy,
    *,
    val_size: int | float = 4000,
    test_size: int | float = 4000,
    seed: int = 0,
) -> EdgeSplit:
    """Hold out validation and test edges as in Vendrov et al. (2016).

    Held-out positives are drawn uniformly without replacement among closure edges
    that are *not* in the transitive reduction (``hierarchy.basic_edges``), so every
    held-out edge can be inferred from the training edges. Each held-out edge gets
    one negative made by replacing its specific or general node (a fair coin) with
    a random node such that the pair is neither an edge of the full closure nor a
    self pair; negatives are unique across validation and test.

    Args:
        hierarchy: The :class:`~keras_gauss.hierarchy.closure.Hierarchy` to split.
        val_size: Number of validation edges, or a fraction (float in (0, 1)) of the
            candidate (non-basic) edges, e.g. ``0.05`` for a small subtree.
        test_size: Same for the test edges.
        seed: Seed of the split and of the negatives.

    Returns:
        An :class:`EdgeSplit` (train edges keep the closure's sorted order).

    Raises:
        ValueError: If there are fewer candidate edges than ``val_size + test_size``.

    Example:
        >>> from keras_gauss.hierarchy.closure import build_hierarchy
        >>> split = split_edges(build_hierarchy(), seed=0)
        >>> len(split.train), len(split.val), len(split.test)
        (735241, 4000, 4000)
    """
    edges = hierarchy.edges
    index = hierarchy.index
    basic = EdgeIndex(hierarchy.basic_edges, hierarchy.num_nodes)
    candidates = np.flatnonzero(~basic.contains(edges[:, 0], edges[:, 1]))
    n_val = _resolve_size(val_size, len(candidates), "val_size")
    n_test = _resolve_size(test_size, len(candidates), "test_size")
    if n_val + n_test > len(candidates):
        raise ValueError(
            f"cannot hold out {n_val} + {n_test} edges: only {len(candidates)} closure edges are not in "
            f"the transitive reduction (of {len(edges)}); pass smaller sizes or fractions, e.g. val_size=0.1"
        )
    rng = np.random.default_rng(seed)
    picked = rng.choice(candidates, size=n_val + n_test, replace=False)
    val_rows, test_rows = np.sort(picked[:n_val]), np.sort(picked[n_val:])
    held_out = np.concatenate([val_rows, test_rows])
    positives = edges[held_out]

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
    negatives = np.stack([neg_s, neg_g], axis=1).astype(np.int32)

    train_mask = np.ones(len(edges), dtype=bool)
    train_mask[held_out] = False
    return EdgeSplit(
        train=edges[train_mask],
        val=edges[val_rows],
        val_neg=negatives[:n_val],
        test=edges[test_rows],
        test_neg=negatives[n_val:],
    )
