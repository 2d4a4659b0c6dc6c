"""gensim's Poincaré embeddings (Nickel & Kiela, 2017) trained on a split's
edges: the peer of `benchmarks/wordnet.py`, trained on a run's own split
(`RUN/split/train.tsv`) and scored on its held-out parts.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["poincare_distance", "train_poincare"]


def poincare_distance(u, v):
    """Poincaré ball distance ``arccosh(1 + 2|u-v|^2 / ((1-|u|^2)(1-|v|^2)))`` over the last axis.

    Example:
        >>> round(float(poincare_distance(np.zeros(2), np.array([0.5, 0.0]))), 6)  # 2 artanh(0.5)
        1.098612
    """
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    diff = np.sum((u - v) ** 2, axis=-1)
    denom = np.maximum((1 - np.sum(u**2, axis=-1)) * (1 - np.sum(v**2, axis=-1)), 1e-15)
    return np.arccosh(1 + 2 * diff / denom)


def train_poincare(train_edges, nodes, *, dim=50, seconds=600.0, max_epochs=50,
                   negative=10, burn_in=0, seed=0):
    """Trains gensim's `PoincareModel` on training edges for at most `seconds`.

    Epochs run one at a time until the time budget or `max_epochs` is used up
    (at least one epoch runs). Pairs are scored by the negative Poincaré
    distance, as Nickel & Kiela's held-out edge protocol does.

    Args:
        train_edges: `(n, 2)` int array of `(specific, general)` ids.
        nodes: node names, indexed by id.
        dim: embedding dimension (default 50).
        seconds: training time budget in seconds (default 600).
        max_epochs: most epochs to run (default 50).
        negative: negatives per positive (gensim's default 10).
        burn_in: gensim's burn-in epochs (default 0).
        seed: gensim's seed.

    Returns:
        `(score, info)`: `score` maps an `(n, 2)` id array to `-distance`
        (higher = more likely an edge); `info` is `{"epochs", "train_seconds",
        "dim", "negative", "burn_in"}`.

    Raises:
        ImportError: gensim is not installed (`pip install gensim`).

    Example:

    >>> from keras_gauss.hierarchy.synthetic import synthetic_hierarchy
    >>> h = synthetic_hierarchy()
    >>> score, info = train_poincare(h.edges, h.nodes, dim=2, max_epochs=3)
    >>> info["epochs"], score(h.edges[:2]).shape
    (3, (2,))
    """
    from gensim.models.poincare import PoincareModel

    edges = np.asarray(train_edges).reshape(-1, 2)
    relations = [(nodes[c], nodes[p]) for c, p in edges.tolist()]
    model = PoincareModel(relations, size=dim, negative=negative, burn_in=burn_in, seed=seed)
    start = time.perf_counter()
    epochs = 0
    while epochs < max_epochs:
        model.train(epochs=1, print_every=10**9)
        epochs += 1
        if time.perf_counter() - start >= seconds:
            break
    elapsed = time.perf_counter() - start

    kv = model.kv
    vectors = np.asarray(kv.vectors, dtype=np.float64)
    rows = np.array([kv.key_to_index.get(name, -1) for name in nodes], dtype=np.int64)

    def score(pairs):
        pairs = np.asarray(pairs).reshape(-1, 2)
        a, b = rows[pairs[:, 0]], rows[pairs[:, 1]]
        if (a < 0).any() or (b < 0).any():
            raise ValueError("a node of these pairs is in no training edge")
        return -poincare_distance(vectors[a], vectors[b])

    info = {"epochs": epochs, "train_seconds": elapsed, "dim": dim,
            "negative": negative, "burn_in": burn_in}
    return score, info
