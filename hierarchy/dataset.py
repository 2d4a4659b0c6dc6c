"""`tf.data` pipeline of positive edges with sampled negatives, for `model.fit`."""

from __future__ import annotations

import itertools

import numpy as np
import tensorflow as tf

from .closure import EdgeIndex, Hierarchy, transitive_reduction
from .negatives import sample_negatives
from .negatives import sibling_negatives as draw_siblings

__all__ = ["make_dataset", "sample_negatives"]


def make_dataset(
    data: Hierarchy | np.ndarray,
    *,
    known: Hierarchy | EdgeIndex | None = None,
    batch_size: int = 1024,
    negatives: int = 1,
    reversed_negatives: bool = False,
    sibling_negatives: float = 0.0,
    corrupt: str = "either",
    shuffle: bool = True,
    drop_remainder: bool = False,
    seed: int = 0,
    first_pass: int = 0,
) -> tf.data.Dataset:
    """Batches of positive `(specific, general)` edges, each with `k` negatives.

    Every pass over the dataset (one epoch) shuffles the edges and draws fresh
    negatives with `keras_gauss.hierarchy.negatives.sample_negatives` in one vectorised
    call: one side of the edge is replaced by a random node that is neither an
    ancestor nor a descendant of the kept node (nor the node itself), as in
    Vilnis & McCallum (2015). Pass `i` (counting from 0) of the dataset uses the
    random stream `np.random.default_rng([seed, i])`, so runs are reproducible.

    Args:
        data: A `keras_gauss.hierarchy.closure.Hierarchy` (all its closure edges) or an
            `(n, 2)` int array of `(specific, general)` edges, e.g. `split.train`.
        known: What the sampler may know, to reject negatives that are true
            edges. Defaults to `data` itself. For a split's training edges pass
            `split.train_index` (the closure of the training edges, with the
            hierarchy's node count), never the full `Hierarchy`: that
            would steer negatives away from the held-out edges.
        batch_size: Positive edges per batch.
        negatives: Corrupted edges `k` per positive.
        reversed_negatives: Also use the reversed pair (general as specific,
            specific as general) as one extra, last negative.
        sibling_negatives: Fraction (0 to 1) of the `negatives` that are hard:
            the general node replaced by a sibling of it in `known` (another
            child of one of its direct parents, unrelated to the specific node;
            `keras_gauss.hierarchy.negatives.sibling_negatives`). Each
            negative is hard with this probability when its edge has such a
            sibling, else stays random. 0 (default) draws exactly as before.
        corrupt: Side to replace: `"either"` (coin flip), `"specific"` or `"general"`.
        shuffle: Shuffle the edges each epoch.
        drop_remainder: Drop the last, smaller batch.
        seed: Seed of shuffling and sampling.
        first_pass: Number of the first pass (the first iteration uses the
            stream `[seed, first_pass]`): a dataset per epoch, as a resumed
            run needs, passes the epoch.

    Returns:
        A `tf.data.Dataset` of `(x, y)` with `K = negatives + reversed_negatives`:
        ``x = {"specific": (b,), "general": (b,), "neg_specific": (b, K),
        "neg_general": (b, K)}`` (int32 node ids) and ranking labels
        `y` float32 `(b, 1 + K)` equal to `[1, 0, ..., 0]` (positive first).

    Example:
        >>> from keras_gauss.hierarchy.closure import build_hierarchy
        >>> ds = make_dataset(build_hierarchy("mammal.n.01"), batch_size=32, negatives=2)
        >>> x, y = next(iter(ds))
        >>> x["neg_general"].shape, y[0].numpy().tolist()
        (TensorShape([32, 2]), [1.0, 0.0, 0.0])
    """
    if isinstance(data, Hierarchy):
        edges = data.edges
        known = data if known is None else known
    else:
        edges = np.asarray(data, dtype=np.int32).reshape(-1, 2)
        if known is None:
            known = EdgeIndex(edges, int(edges.max()) + 1 if len(edges) else 0)
    if not len(edges):
        raise ValueError("no edges to train on")
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if not 0.0 <= sibling_negatives <= 1.0:
        raise ValueError(f"sibling_negatives must lie in [0, 1], got {sibling_negatives}")
    index = known.index if isinstance(known, Hierarchy) else known
    direct = None
    if sibling_negatives > 0:  # direct links of what the sampler knows, once
        direct = EdgeIndex(transitive_reduction(index), index.num_nodes)
    edges = np.asarray(edges, dtype=np.int32)
    k = negatives + int(reversed_negatives)
    labels = np.zeros((batch_size, 1 + k), dtype=np.float32)
    labels[:, 0] = 1.0
    passes = itertools.count(first_pass)

    def epoch():
        rng = np.random.default_rng([seed, next(passes)])
        pos = edges[rng.permutation(len(edges))] if shuffle else edges
        neg_s, neg_g = sample_negatives(pos, index, negatives, corrupt=corrupt, rng=rng)
        if direct is not None:
            sib_s, sib_g, found = draw_siblings(pos, index, negatives, direct=direct, rng=rng)
            hard = found & (rng.random(found.shape) < sibling_negatives)
            neg_s, neg_g = np.where(hard, sib_s, neg_s), np.where(hard, sib_g, neg_g)
        if reversed_negatives:
            neg_s = np.concatenate([neg_s, pos[:, 1:]], axis=1)
            neg_g = np.concatenate([neg_g, pos[:, :1]], axis=1)
        stop = len(pos) - len(pos) % batch_size if drop_remainder else len(pos)
        for start in range(0, stop, batch_size):
            end = min(start + batch_size, stop)
            x = {
                "specific": pos[start:end, 0],
                "general": pos[start:end, 1],
                "neg_specific": neg_s[start:end],
                "neg_general": neg_g[start:end],
            }
            yield x, labels[: end - start]

    ids = tf.TensorSpec((None,), tf.int32)
    negs = tf.TensorSpec((None, k), tf.int32)
    signature = (
        {"specific": ids, "general": ids, "neg_specific": negs, "neg_general": negs},
        tf.TensorSpec((None, 1 + k), tf.float32),
    )
    dataset = tf.data.Dataset.from_generator(epoch, output_signature=signature)
    num_batches = len(edges) // batch_size if drop_remainder else -(-len(edges) // batch_size)
    return dataset.apply(tf.data.experimental.assert_cardinality(num_batches)).prefetch(tf.data.AUTOTUNE)
